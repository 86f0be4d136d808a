// A list of tens of thousands of objects is millions of small allocations freed across
// threads; glibc's malloc spent about a fifth of check's CPU time on them (perf, bench-l).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    exit_now(kubectl_coord::main_exit_code());
}

/// Ends the process without running the C library's exit handlers. The one that costs is
/// mimalloc's: it hands every page of its arenas back to the OS, one madvise at a time
/// (~18 ms after check -n bench-l had printed, perf), which the kernel does anyway when the
/// process ends. Everything we write is flushed first; no handler of ours is registered.
#[cfg(target_os = "linux")]
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit ends the process at once; nothing runs after it.
    unsafe { libc::_exit(code) }
}

#[cfg(not(target_os = "linux"))]
fn exit_now(code: i32) -> ! {
    std::process::exit(code)
}

/// With transparent huge pages "always" (a common distribution default), mimalloc's arenas
/// fault in 2 MiB at a time, each zeroed by the kernel: for a process that lives a second,
/// that is resident memory never used and system time spent clearing it (check -A on the
/// benchmark cluster: 0.87 s of system time against 0.30 without; leases -A 57 MB resident
/// against 32). With "madvise" they do too, since mimalloc asks for huge pages on its arena.
/// So this runs from `.init_array`, before the Rust runtime's first allocation reserves and
/// touches that arena; from `main` it came after those first faults, which took 30-50 ms when
/// the kernel had to find and clear huge pages (perf of check -n bench-l). The setting is
/// inherited by the exec credential plugins we start.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NO_TRANSPARENT_HUGE_PAGES: extern "C" fn() = no_transparent_huge_pages;

#[cfg(target_os = "linux")]
extern "C" fn no_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process; a failure changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

// A list of tens of thousands of objects is millions of small allocations freed across
// threads; glibc's malloc spent about a fifth of check's CPU time on them (perf, bench-l).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    no_transparent_huge_pages();
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
/// against 32). The setting is inherited by the exec credential plugins we start.
#[cfg(target_os = "linux")]
fn no_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process; a failure changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(not(target_os = "linux"))]
fn no_transparent_huge_pages() {}

// A list of tens of thousands of objects is millions of small allocations freed across
// threads; glibc's malloc spent about a fifth of check's CPU time on them (perf, bench-l).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(kubectl_coord::main_exit_code());
}

/// With transparent huge pages "always" (a common distribution default), mimalloc's arenas
/// fault in 2 MiB at a time, each zeroed by the kernel: for a process that lives a second,
/// that is resident memory never used and system time spent clearing it. Measured on the
/// benchmark cluster under "always" (2026-12-06, medians of 7): check -n bench-l 1.00 s of CPU
/// and 223 MB resident without this, 0.39 s and 149 MB with it; leases -A 57 MB against 31.
/// mimalloc's own switches do not reach it: its `no_thp` feature only stops its madvise (the
/// figures above are with it), and its `allow_thp` option is read from MIMALLOC_ALLOW_THP or
/// a C define the crate does not expose. So this runs from `.init_array`, before the Rust
/// runtime's first allocation reserves and touches that arena; from `main` it came after those
/// first faults (30-50 ms when the kernel had to find and clear huge pages, perf). The setting
/// is inherited by the exec credential plugins we start.
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

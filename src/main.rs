// A list of tens of thousands of objects is millions of small allocations freed across
// threads; glibc's malloc spent about a fifth of check's CPU time on them (perf, bench-l).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    no_transparent_huge_pages();
    std::process::exit(kubectl_coord::main_exit_code());
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

// A list of tens of thousands of objects is millions of small allocations freed across
// threads; glibc's malloc spent about a fifth of check's CPU time on them (perf, bench-l).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    return_freed_memory_soon();
    std::process::exit(kubectl_coord::main_exit_code());
}

/// mimalloc's option `purge_delay` (mimalloc.h: `mi_option_purge_delay`, 15 in the enum of
/// both mimalloc 2 and 3); libmimalloc-sys names only the options of older releases.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc 3 keeps freed memory for a second before returning it to the OS: longer than most
/// runs last, so every page buffer and every Vec a read outgrew stayed resident to the end.
/// 10 ms (mimalloc 2's default) lowered the peak RSS of `owners --all -A` at half the
/// scalability envelope from 141 to 116 MB (the same binary, set by environment), with the CPU
/// time unchanged (docs/benchmarks-history.md). MIMALLOC_PURGE_DELAY still overrides it.
fn return_freed_memory_soon() {
    // mimalloc reads its options (the environment included) when the process loads, so a
    // default set now would be ignored: set it, unless the environment already has.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one integer option; mimalloc reads it on its next purge.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10) }
    }
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // The option at that index defaults to mimalloc 3's purge delay, 1000 ms; a renumbered
        // enum in a later mimalloc would show here first.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        let default = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(default, 1000);
        super::return_freed_memory_soon();
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) }, 10);
    }
}

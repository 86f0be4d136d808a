// A list of tens of thousands of objects is millions of small allocations freed across
// threads; glibc's malloc spent about a fifth of check's CPU time on them (perf, bench-l).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(kubectl_coord::main_exit_code());
}

//! `kubectl_complete-coord`: kubectl (1.26+) runs it for `kubectl coord <TAB>`.
fn main() {
    std::process::exit(kubectl_coord::complete::main_exit_code(std::env::args().skip(1).collect()));
}

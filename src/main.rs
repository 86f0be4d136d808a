fn main() {
    std::process::exit(kubectl_coord::main_exit_code());
}

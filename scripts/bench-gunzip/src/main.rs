//! bench-gunzip FILE: decompresses FILE as kubectl-coord's audit reader does and prints the
//! decompressed size. Nothing else: the time it takes is the floor for reading the file at all.
use std::io::{BufReader, Read};

fn main() {
    let path = std::env::args().nth(1).expect("usage: bench-gunzip FILE");
    let file = std::fs::File::open(&path).expect("open");
    let reader = BufReader::with_capacity(256 * 1024, file);
    let mut gz = BufReader::with_capacity(256 * 1024, flate2::bufread::MultiGzDecoder::new(reader));
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = gz.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    println!("{total}");
}

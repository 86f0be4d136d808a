//! A gzip response body inflated in one pass, once it has all arrived.
//!
//! tower-http's streaming decoder inflated each HTTP/2 frame as it came, through a small
//! buffer, into chunks that were then copied into one body: for check -n bench-l (45 MB
//! inflated from 3 MB) that was 9% of the CPU time, and the copy touched every byte twice.
//! Here the output is sized from the gzip trailer, which records the inflated length, and
//! written once by flate2. (libdeflate inflated a whole body about twice as fast, 0.33 ms
//! against 0.70 for a page of 2,000 pods, some 16 ms of CPU over the largest benchmark; it
//! took a C build, which broke under zig's clang for old-glibc builds, and two unsafe blocks.
//! docs/dependencies.md has the figures.)

use std::io::Read;

/// gzip's own bound: deflate expands at most 1032:1. The trailer is the server's word, so
/// the first allocation never exceeds what the compressed bytes could really hold.
const MAX_RATIO: usize = 1032;

pub fn inflate(compressed: &[u8]) -> std::io::Result<Vec<u8>> {
    // An answer with no body has nothing to inflate, whatever its Content-Encoding says.
    if compressed.is_empty() {
        return Ok(Vec::new());
    }
    let len = inflated_len(compressed).min(compressed.len().saturating_mul(MAX_RATIO));
    let mut out = Vec::with_capacity(len);
    flate2::bufread::MultiGzDecoder::new(compressed).read_to_end(&mut out)?;
    Ok(out)
}

/// ISIZE, the last four bytes of a gzip member: the inflated length modulo 2^32.
fn inflated_len(compressed: &[u8]) -> usize {
    match compressed.len().checked_sub(4).map(|at| &compressed[at..]) {
        Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]) as usize,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use proptest::prelude::*;

    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn inflates_to_exactly_the_recorded_length() {
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let out = inflate(&gzip(&data)).unwrap();
        assert_eq!(out, data);
        assert_eq!(out.capacity(), data.len(), "sized from the trailer, not grown");
    }

    #[test]
    fn a_lying_trailer_or_a_broken_body_is_an_error() {
        let data = b"{\"kind\":\"List\"}".repeat(1000);
        let mut body = gzip(&data);
        let n = body.len();
        // A trailer claiming 4 GiB only bounds the first allocation; the CRC check fails.
        body[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(inflate(&body).is_err());
        assert!(inflate(&body[..n / 2]).is_err(), "a truncated body");
        assert!(inflate(b"not gzip").is_err());
        assert!(inflate(b"").unwrap().is_empty(), "no body at all");
    }

    #[test]
    fn several_members_are_all_inflated() {
        let (a, b) = (b"{\"kind\":".repeat(300), b"\"List\"}".repeat(300));
        let mut body = gzip(&a);
        body.extend(gzip(&b));
        assert_eq!(inflate(&body).unwrap(), [a.clone(), b].concat());
        // Two equal members: the last trailer's length and checksum are the first member's too.
        let mut twice = gzip(&a);
        twice.extend(gzip(&a));
        assert_eq!(inflate(&twice).unwrap(), [a.clone(), a.clone()].concat());
        let mut trailing = gzip(&a);
        trailing.extend(b"junk");
        assert!(inflate(&trailing).is_err(), "bytes after the member that are not gzip");
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(any::<u8>(), 0..5000)) {
            prop_assert_eq!(inflate(&gzip(&data)).unwrap(), data);
        }

        #[test]
        fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = inflate(&body);
        }
    }
}

//! Where an audit log comes from: files (plain or gzip, told by their first bytes, not their
//! names), directories of them (rotated logs, several API servers' logs), or standard input;
//! each read as blocks of whole lines, a line longer than the limit skipped rather than held.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

/// A line longer than this is skipped: no audit event is this large, and holding one would
/// make memory grow with the log.
pub const MAX_LINE: usize = 10 * 1024 * 1024;

/// Bytes of whole lines handed to a parser at once.
pub const BLOCK: usize = 1024 * 1024;

/// One input, as the user named it or as found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "-".into(),
            Source::File(p) => p.display().to_string(),
        }
    }

    /// The decompressed bytes: gzip when the file starts with gzip's magic bytes (every member
    /// of a concatenated file), else as they are.
    pub fn open(&self) -> std::io::Result<Box<dyn BufRead + Send>> {
        let raw: Box<dyn Read + Send> = match self {
            Source::Stdin => Box::new(std::io::stdin()),
            Source::File(p) => Box::new(File::open(p)?),
        };
        let mut reader = BufReader::with_capacity(256 * 1024, raw);
        let gzip = reader.fill_buf()?.starts_with(&[0x1f, 0x8b]);
        Ok(if gzip {
            Box::new(BufReader::with_capacity(256 * 1024, flate2::bufread::MultiGzDecoder::new(reader)))
        } else {
            Box::new(reader)
        })
    }
}

/// The inputs `paths` name: `-` is standard input, a directory is every regular file in it
/// (not below it, hidden ones left out), in name order. A path that does not exist or cannot
/// be read is an error naming it.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<Source>, String> {
    let mut out = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            if out.contains(&Source::Stdin) {
                return Err("--audit-log -: standard input named twice".into());
            }
            out.push(Source::Stdin);
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| format!("--audit-log {}: {}", path.display(), io_reason(&e)))?;
        if meta.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| format!("--audit-log {}: {}", path.display(), io_reason(&e)))?
                .filter_map(Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .collect();
            if files.is_empty() {
                return Err(format!("--audit-log {}: the directory holds no files", path.display()));
            }
            files.sort();
            out.extend(files.into_iter().map(Source::File));
        } else {
            out.push(Source::File(path.clone()));
        }
    }
    Ok(out)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// Whole lines, a block at a time, with the number of the block's first line; lines longer
/// than [`MAX_LINE`] are dropped and reported by number.
pub struct Lines<R> {
    reader: R,
    /// The next line's number (1-based).
    line: u64,
    /// Bytes read so far (decompressed).
    pub bytes: u64,
    /// An error ended the input early: what it said.
    pub failed: Option<String>,
}

/// A block of whole lines.
pub struct Block {
    pub text: Vec<u8>,
    pub first_line: u64,
    /// Lines dropped for their length, by number.
    pub too_long: Vec<u64>,
    /// The block ends the input without a final newline: its last line may be cut short.
    pub unterminated: bool,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Lines<R> {
        Lines { reader, line: 1, bytes: 0, failed: None }
    }

    /// The reader, positioned after the last block returned.
    pub fn into_inner(self) -> R {
        self.reader
    }

    /// The next block, None at the end of the input (or after a read error, in `failed`).
    pub fn next_block(&mut self) -> Option<Block> {
        let mut block = Block {
            text: Vec::with_capacity(BLOCK + 4096),
            first_line: self.line,
            too_long: Vec::new(),
            unterminated: false,
        };
        while block.text.len() < BLOCK {
            let start = block.text.len();
            match self.read_line(&mut block.text) {
                Ok(LineEnd::Newline) => {
                    if block.text.len() - start > MAX_LINE {
                        block.text.truncate(start);
                        block.text.push(b'\n');
                        block.too_long.push(self.line);
                    }
                    self.line += 1;
                }
                Ok(LineEnd::TooLong) => {
                    block.text.truncate(start);
                    block.text.push(b'\n');
                    block.too_long.push(self.line);
                    self.line += 1;
                }
                Ok(LineEnd::Eof) => {
                    block.unterminated = block.text.len() > start;
                    break;
                }
                Err(e) => {
                    self.failed = Some(e.to_string());
                    break;
                }
            }
        }
        self.bytes += block.text.len() as u64;
        (!block.text.is_empty() || !block.too_long.is_empty()).then_some(block)
    }

    /// Appends one line (with its newline) to `out`; a line past [`MAX_LINE`] is read through
    /// to its end without being kept.
    fn read_line(&mut self, out: &mut Vec<u8>) -> std::io::Result<LineEnd> {
        let start = out.len();
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(LineEnd::Eof);
            }
            let (take, done) = match memchr::memchr(b'\n', available) {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if out.len() - start + take > MAX_LINE + 1 {
                self.reader.consume(take);
                self.bytes += take as u64;
                out.truncate(start);
                if done {
                    return Ok(LineEnd::TooLong);
                }
                return self.skip_rest_of_line();
            }
            out.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if done {
                return Ok(LineEnd::Newline);
            }
        }
    }

    fn skip_rest_of_line(&mut self) -> std::io::Result<LineEnd> {
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                return Ok(LineEnd::TooLong);
            }
            match available.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.reader.consume(i + 1);
                    self.bytes += (i + 1) as u64;
                    return Ok(LineEnd::TooLong);
                }
                None => {
                    let n = available.len();
                    self.reader.consume(n);
                    self.bytes += n as u64;
                }
            }
        }
    }
}

enum LineEnd {
    Newline,
    TooLong,
    Eof,
}

/// Whether the file is a JSON document rather than JSON lines: its first line does not hold
/// a whole JSON value (a pretty-printed EventList, CloudWatch's `filter-log-events` output,
/// records concatenated without newlines).
pub fn is_json_document(first_block: &[u8]) -> bool {
    let start = first_block.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(first_block.len());
    let text = &first_block[start..];
    if !matches!(text.first(), Some(b'{' | b'[')) {
        return false;
    }
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut values = serde_json::Deserializer::from_slice(line).into_iter::<serde::de::IgnoredAny>();
    !matches!((values.next(), values.next()), (Some(Ok(_)), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(text: &[u8]) -> Vec<Block> {
        let mut lines = Lines::new(std::io::Cursor::new(text.to_vec()));
        std::iter::from_fn(|| lines.next_block()).collect()
    }

    #[test]
    fn blocks_are_whole_lines_and_count_them() {
        let text = b"a\nb\nc".to_vec();
        let got = blocks(&text);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].text, b"a\nb\nc");
        assert_eq!(got[0].first_line, 1);
        assert!(got[0].unterminated);
        let mut big = Vec::new();
        for i in 0..300_000 {
            big.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let got = blocks(&big);
        assert!(got.len() > 1);
        let mut line = 1;
        for b in &got {
            assert_eq!(b.first_line, line);
            assert!(b.text.ends_with(b"\n") && !b.unterminated);
            line += b.text.iter().filter(|&&c| c == b'\n').count() as u64;
        }
        assert_eq!(line, 300_001);
    }

    #[test]
    fn a_line_over_the_limit_is_dropped_and_named() {
        let mut text = b"first\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        text.extend_from_slice(b"\nthird\n");
        let got = blocks(&text);
        let all: Vec<u8> = got.iter().flat_map(|b| b.text.clone()).collect();
        assert_eq!(all, b"first\n\nthird\n", "the long line leaves an empty line in its place");
        assert_eq!(got.iter().flat_map(|b| b.too_long.clone()).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn documents_are_told_from_lines() {
        assert!(!is_json_document(b"{\"a\":1}\n{\"a\":2}\n"));
        assert!(is_json_document(b"{\n  \"kind\": \"EventList\",\n"));
        assert!(is_json_document(b"{\"a\":1}{\"a\":2}"));
        assert!(!is_json_document(b"2026-01-01T00:00:00Z {\"a\":1}\n"));
    }

    #[test]
    fn gzip_is_told_by_its_bytes() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("coord-gz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log.1");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\n").unwrap();
        let mut bytes = enc.finish().unwrap();
        let mut second = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        second.write_all(b"two\n").unwrap();
        bytes.extend(second.finish().unwrap());
        std::fs::write(&path, bytes).unwrap();
        let mut text = String::new();
        Source::File(path).open().unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "one\ntwo\n", "every member of a concatenated gzip file");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

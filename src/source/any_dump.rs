//! `check --from PATH`: the formats a dump comes in, told apart by what PATH holds, each read
//! as the records of a coord dump (src/source/dump.rs) so that one replay serves them all.

use std::path::Path;

use super::dump::{self, Header, Opened, Record};
use super::{cluster_info, support_bundle};
use crate::snapshot::ApiResource;

pub enum Reader {
    Coord(dump::Reader),
    ClusterInfo(cluster_info::Reader),
    SupportBundle(support_bundle::Reader),
}

/// Opens PATH as whichever format it holds. Err: unreadable or none of them, in one line.
pub fn open(path: &Path) -> Result<(Header, Reader), String> {
    if cluster_info::is_directory_dump(path) {
        let (header, reader) = cluster_info::open_directory(path)?;
        return Ok((header, Reader::ClusterInfo(reader)));
    }
    if support_bundle::is_directory(path) {
        let (header, reader) = support_bundle::open_directory(path)?;
        return Ok((header, Reader::SupportBundle(reader)));
    }
    if path.is_file() && support_bundle::is_archive(path) {
        let (header, reader) = support_bundle::open_archive(path)?;
        return Ok((header, Reader::SupportBundle(reader)));
    }
    match dump::open(path)? {
        Opened::Dump(header, reader) => Ok((header, Reader::Coord(reader))),
        Opened::Other { first, rest } if cluster_info::starts_stream(&first) => {
            let (header, reader) = cluster_info::open_stream(path, &first, rest);
            Ok((header, Reader::ClusterInfo(reader)))
        }
        Opened::Other { .. } => Err(format!(
            "{}: not a kubectl coord dump, a kubectl cluster-info dump or a support bundle (see docs/check.md for the formats)",
            path.display()
        )),
    }
}

impl Reader {
    /// Another tool's format: a part that cannot be read is skipped and the rest read. A coord
    /// dump that cannot be read further was cut short.
    pub fn skips_bad_parts(&self) -> bool {
        !matches!(self, Reader::Coord(_))
    }

    /// What the format cannot feed, by mechanism name, once every record was read.
    pub fn not_covered(&self) -> Vec<(&'static str, String)> {
        match self {
            Reader::Coord(_) => Vec::new(),
            Reader::ClusterInfo(r) => r.not_covered(),
            Reader::SupportBundle(r) => r.not_covered(),
        }
    }

    /// The resources served, once every record was read: a bundle learns its custom
    /// resources as it goes; the others say them in the header.
    pub fn resources(&self, header: Vec<ApiResource>) -> Vec<ApiResource> {
        match self {
            Reader::SupportBundle(r) => r.resources(),
            _ => header,
        }
    }

    /// The one namespace the dump covers, once read (None: several, or all).
    pub fn namespace(&self, header: Option<String>) -> Option<String> {
        match self {
            Reader::SupportBundle(r) => r.only_namespace(),
            _ => header,
        }
    }
}

impl Iterator for Reader {
    type Item = Result<Record, String>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Reader::Coord(r) => r.next(),
            Reader::ClusterInfo(r) => r.next(),
            Reader::SupportBundle(r) => r.next(),
        }
    }
}

//! A zstd-compressed JSON Lines file imported as its text would be: sampled before it is
//! read and, where its ids ascend, packed while read ([`super::Importer::stream_input`]),
//! rather than held whole in the sorter. A compressed file has no offsets into its text to
//! seek to, so the sample reads the decompressed text once from its start
//! ([`super::presample::Sequential`]): one more decompression of the file (zstd decodes
//! several hundred MB a second on one core), against a sort of every document.
//!
//! That needs the text's size ahead (where the sample's windows go, and whether the import
//! is big enough to stream): the sum of the frames' content sizes, which zstd writes in
//! each frame's header when it knows it (`zstd FILE` does; a compressor fed a pipe may
//! not). [`content_size`] walks the frames' and blocks' headers without decompressing; a
//! file where any frame has no size, or whose headers do not add up to the file, is read
//! through a decoder as a stream instead (`super::import_reader`), as before.

use super::presample::{Sequential, presample};
use super::{
    Again, ImportError, ImportOptions, ImportProgress, ImportReport, Importer, of_file, sniff,
};
use crate::Database;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The magic number that starts a zstd frame (little-endian on disk).
const FRAME_MAGIC: u32 = 0xFD2F_B528;

/// Skippable frames start with one of 16 magic numbers, `0x184D2A50` to `0x184D2A5F`.
const SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// The total content size of the zstd frames in `input` (read from its start to its end),
/// or `None` if a frame does not give its size or the bytes are not a well-formed sequence
/// of frames (then nothing is known ahead; the decoder reports what is wrong). Reads the
/// frame and block headers only, seeking past the blocks' bytes.
pub(super) fn content_size(mut input: impl Read + Seek) -> std::io::Result<Option<u64>> {
    let len = input.seek(SeekFrom::End(0))?;
    input.rewind()?;
    let mut r = Headers {
        reader: BufReader::new(input),
        len,
    };
    let mut total = 0u64;
    let mut frames = 0u32;
    loop {
        let mut magic = [0u8; 4];
        match read_some(&mut r.reader, &mut magic)? {
            0 if frames > 0 => return Ok(Some(total)),
            4 => {}
            _ => return Ok(None),
        }
        frames += 1;
        let magic = u32::from_le_bytes(magic);
        if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC {
            let mut size = [0u8; 4];
            if read_some(&mut r.reader, &mut size)? != 4
                || !r.skip(u32::from_le_bytes(size).into())?
            {
                return Ok(None);
            }
            continue;
        }
        if magic != FRAME_MAGIC {
            return Ok(None);
        }
        let Some(size) = frame(&mut r)? else {
            return Ok(None);
        };
        let Some(sum) = total.checked_add(size) else {
            return Ok(None);
        };
        total = sum;
    }
}

/// The content size of the frame whose magic was just read, after skipping the rest of it;
/// `None` if its header does not give one or it is cut or malformed.
fn frame(r: &mut Headers<impl Read + Seek>) -> std::io::Result<Option<u64>> {
    let mut descriptor = [0u8; 1];
    if read_some(&mut r.reader, &mut descriptor)? != 1 {
        return Ok(None);
    }
    let fhd = descriptor[0];
    let single_segment = fhd & 0x20 != 0;
    let checksum = fhd & 0x04 != 0;
    if fhd & 0x08 != 0 {
        return Ok(None); // the reserved bit must be zero
    }
    let dict_id_bytes = [0, 1, 2, 4][usize::from(fhd & 0x03)];
    let size_bytes = match fhd >> 6 {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    if size_bytes == 0 {
        return Ok(None); // the frame does not give its size
    }
    let window_bytes = if single_segment { 0 } else { 1 };
    if !r.skip(window_bytes + dict_id_bytes)? {
        return Ok(None);
    }
    // The field is little-endian: its bytes first in an 8-byte buffer of zeros.
    let mut le = [0u8; 8];
    let Some(field) = le.get_mut(..size_bytes) else {
        return Ok(None);
    };
    if read_some(&mut r.reader, field)? != size_bytes {
        return Ok(None);
    }
    let mut size = u64::from_le_bytes(le);
    if size_bytes == 2 {
        size += 256; // the two-byte field is offset by 256
    }
    loop {
        let mut header = [0u8; 3];
        if read_some(&mut r.reader, &mut header)? != 3 {
            return Ok(None);
        }
        let header = u32::from(header[0]) | u32::from(header[1]) << 8 | u32::from(header[2]) << 16;
        let last = header & 1 != 0;
        let payload = match (header >> 1) & 0x03 {
            0 | 2 => u64::from(header >> 3), // raw, compressed
            1 => 1,                          // RLE: one byte repeated
            _ => return Ok(None),            // reserved
        };
        if !r.skip(payload)? {
            return Ok(None);
        }
        if last {
            break;
        }
    }
    if checksum && !r.skip(4)? {
        return Ok(None);
    }
    Ok(Some(size))
}

/// Reads into `buf` until it is full or the input ends; the bytes read.
fn read_some(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|b| !b.is_empty()) {
        match r.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The input whose headers [`content_size`] reads, `len` bytes long.
struct Headers<R> {
    reader: BufReader<R>,
    len: u64,
}

impl<R: Read + Seek> Headers<R> {
    /// Skips `n` bytes by seeking (a block's bytes are not read); false if the input ends
    /// first.
    fn skip(&mut self, n: u64) -> std::io::Result<bool> {
        let at = self.reader.stream_position()?;
        let (Some(end), Ok(by)) = (at.checked_add(n), i64::try_from(n)) else {
            return Ok(false);
        };
        if end > self.len {
            return Ok(false);
        }
        self.reader.seek_relative(by)?;
        Ok(true)
    }
}

/// Imports the zstd-compressed file at `path` (`name` in messages) whose frames hold
/// `text_bytes` bytes of text: as [`super::import_path`] imports a text file, sampled
/// first and, where its ids ascend, packed while read; started again, sorted, when an id
/// from a field then turns out of order.
pub(super) fn import(
    db: &Database,
    collection: &str,
    (path, name): (&Path, &str),
    text_bytes: u64,
    opts: &ImportOptions,
    progress: impl FnMut(ImportProgress),
) -> Result<ImportReport, ImportError> {
    let read_err = |error| ImportError::Read {
        file: name.to_owned(),
        error,
    };
    let open = || -> std::io::Result<zstd::stream::read::Decoder<'static, BufReader<File>>> {
        zstd::stream::read::Decoder::new(File::open(path)?)
    };
    let mut reader = open().map_err(read_err)?;
    let (format, prefix) = match opts.format {
        Some(f) => (f, Vec::new()),
        None => sniff(&mut reader).map_err(read_err)?,
    };
    let mut progress = progress;
    let mut imp = Importer::new(db, collection, opts, format, &mut progress)?;
    imp.progress.bytes_total = Some(text_bytes);
    let out_of_order = Arc::new(AtomicBool::new(false));
    // A JSON array is not sampled (`stream_input` leaves it as it is).
    imp.stream_input(text_bytes, &out_of_order, |max_docs, max_bytes, write| {
        let mut text = Sequential::new(open()?);
        presample(&mut text, text_bytes, max_docs, max_bytes, write)
    })
    .map_err(|e| of_file(e, name))?;
    match imp.run_reader(name, std::io::Cursor::new(prefix).chain(reader)) {
        Err(_) if out_of_order.load(Ordering::Relaxed) => {
            let again = Again {
                db,
                collection,
                opts,
                format,
                bytes_total: text_bytes,
            };
            again.sorted(name, open().map_err(read_err)?, &mut progress)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "tests: a failed unwrap is a failed test"
    )]
    use super::*;
    use std::io::Cursor;

    fn frame_of(text: &[u8], level: i32, size_known: bool, checksum: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let mut enc = zstd::stream::write::Encoder::new(&mut out, level).unwrap();
        enc.include_checksum(checksum).unwrap();
        if size_known {
            enc.set_pledged_src_size(Some(text.len() as u64)).unwrap();
            enc.include_contentsize(true).unwrap();
        } else {
            enc.include_contentsize(false).unwrap();
        }
        std::io::Write::write_all(&mut enc, text).unwrap();
        enc.finish().unwrap();
        out
    }

    #[test]
    fn the_content_size_is_the_sum_of_the_frames_sizes() {
        let a: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let b = b"{\"a\":1}\n".repeat(10_000);
        let mut file = frame_of(&a, 3, true, true);
        file.extend(frame_of(&b, 19, true, false));
        file.extend(frame_of(b"", 1, true, false));
        // A skippable frame between, as some tools write.
        file.extend(0x184D_2A53u32.to_le_bytes());
        file.extend(5u32.to_le_bytes());
        file.extend(b"hello");
        file.extend(frame_of(b"x", 1, true, true));
        let want = (a.len() + b.len() + 1) as u64;
        assert_eq!(content_size(Cursor::new(&file)).unwrap(), Some(want));
        // The decoder agrees.
        let mut text = Vec::new();
        zstd::stream::read::Decoder::new(Cursor::new(&file))
            .unwrap()
            .read_to_end(&mut text)
            .unwrap();
        assert_eq!(text.len() as u64, want);
    }

    #[test]
    fn a_frame_without_its_size_or_cut_or_bad_bytes_give_no_size() {
        let text = b"{\"a\":1}\n".repeat(50_000);
        let whole = frame_of(&text, 3, true, true);
        assert_eq!(
            content_size(Cursor::new(&whole)).unwrap(),
            Some(text.len() as u64)
        );
        assert_eq!(
            content_size(Cursor::new(frame_of(&text, 3, false, true))).unwrap(),
            None
        );
        for cut in [0, 3, 4, 5, 7, whole.len() / 2, whole.len() - 1] {
            assert_eq!(
                content_size(Cursor::new(&whole[..cut])).unwrap(),
                None,
                "cut at {cut}"
            );
        }
        let mut trailing = whole.clone();
        trailing.extend(b"{\"not\":\"zstd\"}\n");
        assert_eq!(content_size(Cursor::new(&trailing)).unwrap(), None);
        let mut reserved = whole.clone();
        if let Some(b) = reserved.get_mut(4) {
            *b |= 0x08;
        }
        assert_eq!(content_size(Cursor::new(&reserved)).unwrap(), None);
    }

    #[test]
    fn any_bytes_give_a_size_or_none_without_a_panic() {
        let text = b"{\"a\":1}\n".repeat(1_000);
        let whole = frame_of(&text, 3, true, true);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut bytes = whole.clone();
            let at = usize::try_from(state % bytes.len() as u64).unwrap();
            if let Some(b) = bytes.get_mut(at) {
                *b ^= (state >> 32) as u8 | 1;
            }
            bytes.truncate(usize::try_from((state >> 16) % (bytes.len() as u64 + 1)).unwrap());
            let _ = content_size(Cursor::new(&bytes)).unwrap();
        }
    }
}

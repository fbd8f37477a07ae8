//! `stele convert` and `stele inspect`: JSON to documents and back, and a view of a document.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use stele_doc::{
    Document, DuplicateKeys, JsonOptions, KeyOrder, WriteOptions, format::HEADER_BYTE,
};

use crate::io::{read_input, write_output};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// JSON text.
    Json,
    /// A Stele document.
    Doc,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Duplicates {
    /// Keep the last value, at the first key's position (like JSON.parse).
    Last,
    /// Keep the first value.
    First,
    /// Fail, naming the key.
    Reject,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele convert order.json -o order.stele          JSON to document
  stele convert order.stele --pretty               document to indented JSON on stdout
  curl -s URL | stele convert - -o doc.stele       from standard input
  stele convert big.json -o big.stele --duplicates reject --max-depth 512")]
pub struct ConvertArgs {
    /// Input file, or - for standard input. Documents are recognised by their first byte.
    input: PathBuf,
    /// Output file (written atomically), or - for standard output (the default).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Output kind; by default the opposite of the input's kind.
    #[arg(long, value_enum)]
    to: Option<Target>,
    /// JSON output: indent with two spaces.
    #[arg(long)]
    pretty: bool,
    /// JSON output: properties in sorted key order instead of input order.
    #[arg(long)]
    sort_keys: bool,
    /// Document output: keep only sorted key order (smaller; JSON output comes out sorted).
    #[arg(long)]
    sorted_only: bool,
    /// Document output: what to do with repeated keys in one object.
    #[arg(long, value_enum, default_value = "last")]
    duplicates: Duplicates,
    /// Document output: deepest nesting accepted (at most 1024).
    #[arg(long, default_value_t = stele_doc::DEFAULT_MAX_DEPTH)]
    max_depth: usize,
    /// Document output: compress strings of at least this size with LZ4 when it pays; 0
    /// turns compression off. A size: 65536 (bytes), 64KiB, 1.5MiB (K, M, G alone: KiB, MiB,
    /// GiB; KB, MB, GB: powers of 1000).
    #[arg(long, value_name = "SIZE", default_value_t = stele_doc::DEFAULT_COMPRESS_MIN_BYTES, value_parser = crate::size::at_least(0))]
    compress_min: usize,
}

impl From<Duplicates> for DuplicateKeys {
    fn from(d: Duplicates) -> Self {
        match d {
            Duplicates::Last => DuplicateKeys::LastWins,
            Duplicates::First => DuplicateKeys::FirstWins,
            Duplicates::Reject => DuplicateKeys::Reject,
        }
    }
}

fn write_options(args: &ConvertArgs) -> WriteOptions {
    WriteOptions::default()
        .duplicate_keys(args.duplicates.into())
        .key_order(if args.sorted_only {
            KeyOrder::Sorted
        } else {
            KeyOrder::Original
        })
        .max_depth(args.max_depth)
        .compress_strings((args.compress_min > 0).then_some(args.compress_min))
}

/// Whether `bytes` look like a document rather than JSON text (JSON never starts with 0xB1,
/// which is not a valid first byte of UTF-8).
fn is_document(bytes: &[u8]) -> bool {
    bytes.first() == Some(&HEADER_BYTE)
}

fn open_document<'a>(bytes: &'a [u8], name: &std::path::Path) -> Result<Document<&'a [u8]>> {
    Document::new(bytes)
        .with_context(|| format!("{} is not a valid Stele document", name.display()))
}

/// The document as JSON text per the output flags, with a final newline.
fn json_text(doc: &Document<&[u8]>, args: &ConvertArgs) -> Vec<u8> {
    let opts = JsonOptions::new()
        .pretty(args.pretty)
        .sorted_keys(args.sort_keys);
    let mut text = doc.to_json_with(&opts).into_bytes();
    text.push(b'\n');
    text
}

pub fn convert(args: &ConvertArgs) -> Result<()> {
    let input = read_input(&args.input)?;
    let from_doc = is_document(&input);
    let target = args
        .to
        .unwrap_or(if from_doc { Target::Json } else { Target::Doc });
    let out = match (from_doc, target) {
        (true, Target::Json) => json_text(&open_document(&input, &args.input)?, args),
        (false, Target::Doc) => stele_doc::from_json_with(&input, write_options(args))
            .with_context(|| format!("converting {}", args.input.display()))?,
        (true, Target::Doc) => {
            // Re-encode with the requested options (e.g. --sorted-only or another threshold).
            let doc = open_document(&input, &args.input)?;
            stele_doc::from_json_with(doc.to_json().as_bytes(), write_options(args))?
        }
        (false, Target::Json) => {
            let doc = stele_doc::from_json_with(&input, write_options(args))
                .with_context(|| format!("converting {}", args.input.display()))?;
            json_text(&Document::new(doc.as_slice())?, args)
        }
    };
    let to_stdout = args.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if target == Target::Doc && to_stdout && std::io::stdout().is_terminal() {
        bail!(
            "refusing to write a binary document to a terminal: add -o FILE or redirect the output"
        );
    }
    write_output(args.output.as_deref(), &out)
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stele inspect order.stele                       layout: sizes per part, offset widths
  stele inspect order.stele --path items[0].sku   one value, as JSON
  stele inspect order.json --json                 converts first, prints the layout as JSON")]
pub struct InspectArgs {
    /// A document file, a JSON file (converted in memory first), or - for standard input.
    input: PathBuf,
    /// Print only the value at this path (e.g. `customer.address.city`, `items[0]`).
    #[arg(long)]
    path: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn inspect(args: &InspectArgs) -> Result<()> {
    let input = read_input(&args.input)?;
    let bytes = if is_document(&input) {
        input
    } else {
        stele_doc::from_json(&input)
            .with_context(|| format!("converting {}", args.input.display()))?
    };
    let doc = open_document(&bytes, &args.input)?;
    if let Some(path) = &args.path {
        let value = doc
            .path(path)?
            .with_context(|| format!("{} has no value at path {path:?}", args.input.display()))?;
        println!("{}", value.to_json());
        return Ok(());
    }
    let l = stele_doc::inspect(&doc);
    if args.json {
        let v = serde_json::json!({
            "total_bytes": l.total_bytes,
            "names_bytes": l.names_bytes,
            "names": l.names,
            "objects": l.objects,
            "properties": l.properties,
            "object_header_bytes": l.object_header_bytes,
            "objects_with_order": l.objects_with_order,
            "arrays": l.arrays,
            "elements": l.elements,
            "array_header_bytes": l.array_header_bytes,
            "offset_widths": {"1": l.offset_widths[0], "2": l.offset_widths[1], "4": l.offset_widths[2], "8": l.offset_widths[3]},
            "strings": l.strings,
            "string_bytes": l.string_bytes,
            "compressed_strings": l.compressed_strings,
            "compressed_string_bytes": l.compressed_string_bytes,
            "compressed_string_raw_bytes": l.compressed_string_raw_bytes,
            "numbers": l.numbers,
            "number_bytes": l.number_bytes,
            "framing_bytes": l.framing_bytes,
            "max_depth": l.max_depth,
        });
        println!("{v}");
    } else {
        println!("{l}");
    }
    Ok(())
}

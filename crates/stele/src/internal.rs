//! Collection names: the rule for user collections, and the database's internal collections
//! and meta keys as types, each with one encoding to the bytes on disk and one parse back.
//!
//! ```text
//! _meta                          the meta collection (Internal::Meta)
//! _packs/<collection>            a collection's packed blocks (Internal::Packs)
//! _import-<pid>-<n>/<target>     an import's staging collection (Internal::Import)
//! dict/<collection>/<id:010>     meta key: a dictionary's bytes (MetaKey::Dict)
//! compress/<collection>          meta key: the compression setting, `0` or `1` (MetaKey::Compress)
//! ids/<collection>               meta key: `int` if its ids are integers (MetaKey::IntIds, `crate::ids`)
//! ```
//!
//! User collection names never start with `_` ([`check_collection_name`]) and never hold `/`,
//! so no user name is an internal one, and the collection inside an internal name or a meta
//! key is the whole rest of it.

use crate::compress::DictionaryId;
use crate::error::{Error, Result};

/// Checks a collection name: 1 to 100 of `A-Z a-z 0-9 _ - .`, not starting with `.` or `_`
/// (names starting with `_` are reserved). ASCII only: a name is part of file and
/// table names and command lines, where other characters would need care.
pub fn check_collection_name(name: &str) -> Result<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let reason = if name.is_empty() {
        "it is empty".to_owned()
    } else if name.len() > 100 {
        format!("it is {} bytes long, over 100", name.len())
    } else if name.starts_with('_') {
        "names starting with '_' are Stele's own".to_owned()
    } else if name.starts_with('.') {
        "it starts with '.'".to_owned()
    } else if let Some((i, c)) = name.chars().enumerate().find(|&(_, c)| !allowed(c)) {
        format!("character {} ({c:?}) is not allowed", i + 1)
    } else {
        return Ok(());
    };
    Err(Error::InvalidCollectionName {
        name: name.chars().take(120).collect(),
        reason,
    })
}

/// What every internal collection's name starts with (and no user collection's).
const INTERNAL_MARK: char = '_';

/// Whether `name` is an internal collection's (not a user collection's): the one test of it.
pub(crate) fn is_internal(name: &str) -> bool {
    name.starts_with(INTERNAL_MARK)
}

const META_NAME: &str = "_meta";
const PACKS_PREFIX: &str = "_packs/";
const IMPORT_PREFIX: &str = "_import-";

/// The name of the meta collection, which holds dictionaries and settings ([`MetaKey`]). Its
/// values are raw bytes, not documents.
pub(crate) const META: &str = META_NAME;

/// Table block size of the meta collection's tables: its values are a few dictionaries of
/// a few KiB (compressed) and settings of one byte, so 4 KiB blocks padded each dictionary
/// with 2 KiB on average, a third of it (16-byte blocks, as packs maps use: at most 15
/// bytes of padding per value; a version 3 table).
pub(crate) const META_TABLE_BLOCK_BYTES: u32 = 16;

/// `map` set up to write its tables as collection `name`'s should: the meta collection
/// with blocks of [`META_TABLE_BLOCK_BYTES`], any other with the store's.
pub(crate) fn fit_map(name: &str, mut map: stele_durable::DurableMap) -> stele_durable::DurableMap {
    if name == META {
        map.set_table_block_size(META_TABLE_BLOCK_BYTES);
    }
    map
}

/// An internal collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Internal {
    /// Dictionaries and settings.
    Meta,
    /// The packed blocks of a user collection.
    Packs(String),
    /// Documents staged by an import into `target` (by process `pid`, its `n`-th import),
    /// merged into it at the end or dropped.
    Import { pid: u32, n: u64, target: String },
}

impl Internal {
    /// The collection name.
    pub(crate) fn name(&self) -> String {
        match self {
            Internal::Meta => META_NAME.to_owned(),
            Internal::Packs(c) => {
                let mut name = String::new();
                packs_name_into(c, &mut name);
                name
            }
            Internal::Import { pid, n, target } => format!("{IMPORT_PREFIX}{pid}-{n}/{target}"),
        }
    }

    /// The internal collection `name` names, or `None` (a user collection, or a name no
    /// version of the database writes).
    pub(crate) fn parse(name: &str) -> Option<Internal> {
        if name == META_NAME {
            return Some(Internal::Meta);
        }
        if let Some(c) = name.strip_prefix(PACKS_PREFIX) {
            return user_name(c).then(|| Internal::Packs(c.to_owned()));
        }
        let (ids, target) = name.strip_prefix(IMPORT_PREFIX)?.split_once('/')?;
        let (pid, n) = ids.split_once('-')?;
        if !user_name(target) {
            return None;
        }
        Some(Internal::Import {
            pid: canonical_number(pid)?,
            n: canonical_number(n)?,
            target: target.to_owned(),
        })
    }
}

/// The name of the collection holding `collection`'s packed blocks.
pub(crate) fn packs_name(collection: &str) -> String {
    Internal::Packs(collection.to_owned()).name()
}

/// [`packs_name`] written into `out` (cleared first), reusing its capacity.
pub(crate) fn packs_name_into(collection: &str, out: &mut String) {
    out.clear();
    out.push_str(PACKS_PREFIX);
    out.push_str(collection);
}

/// Whether `name` can be a user collection inside an internal name (not empty, no `/`, not
/// itself internal). Looser than [`check_collection_name`]: names the database wrote stay
/// readable if that rule ever narrows.
fn user_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && !is_internal(name)
}

/// A decimal number written as `to_string` writes it (no sign, no leading zero).
fn canonical_number<T: std::str::FromStr + ToString>(s: &str) -> Option<T> {
    let n: T = s.parse().ok()?;
    (n.to_string() == s).then_some(n)
}

const DICT_PREFIX: &str = "dict/";
const COMPRESS_PREFIX: &str = "compress/";
const IDS_PREFIX: &str = "ids/";

/// A key of the meta collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MetaKey {
    /// Dictionary `id` of `collection` (its bytes as the value).
    Dict {
        collection: String,
        id: DictionaryId,
    },
    /// Whether `collection` compresses new documents (`0` off, anything else on; absent: on).
    Compress(String),
    /// Whether `collection` holds integer ids (`int`; absent: text ids). Set by the write
    /// that gives an empty collection its first integer ids (`crate::ids`).
    IntIds(String),
}

impl MetaKey {
    /// The key's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            MetaKey::Dict { collection, id } => {
                format!("{}{id:010}", Self::dicts_of(collection)).into_bytes()
            }
            MetaKey::Compress(c) => format!("{COMPRESS_PREFIX}{c}").into_bytes(),
            MetaKey::IntIds(c) => format!("{IDS_PREFIX}{c}").into_bytes(),
        }
    }

    /// The key of dictionary `id` of `collection`.
    pub(crate) fn dict(collection: &str, id: DictionaryId) -> Vec<u8> {
        MetaKey::Dict {
            collection: collection.to_owned(),
            id,
        }
        .encode()
    }

    /// The key of `collection`'s compression setting.
    pub(crate) fn compress(collection: &str) -> Vec<u8> {
        MetaKey::Compress(collection.to_owned()).encode()
    }

    /// The key of `collection`'s id kind.
    pub(crate) fn int_ids(collection: &str) -> Vec<u8> {
        MetaKey::IntIds(collection.to_owned()).encode()
    }

    /// What the keys of every id kind start with.
    pub(crate) const INT_IDS: &[u8] = IDS_PREFIX.as_bytes();

    /// What the keys of every dictionary start with (they sort by collection, then id).
    pub(crate) const DICTS: &[u8] = DICT_PREFIX.as_bytes();

    /// What the keys of `collection`'s dictionaries start with.
    pub(crate) fn dicts_of(collection: &str) -> String {
        format!("{DICT_PREFIX}{collection}/")
    }

    /// The meta key `key` is; an error naming the key if it is none.
    pub(crate) fn parse(key: &[u8]) -> Result<MetaKey> {
        let bad = |reason| Error::CorruptMetaKey {
            key: String::from_utf8_lossy(key).into_owned(),
            reason,
        };
        let key_text = std::str::from_utf8(key).map_err(|_| bad("not UTF-8"))?;
        if let Some(rest) = key_text.strip_prefix(DICT_PREFIX) {
            let (collection, id) = rest
                .rsplit_once('/')
                .ok_or(bad("a dictionary key does not name a collection and an id"))?;
            if !user_name(collection) {
                return Err(bad("a dictionary key does not name a collection"));
            }
            let digits = id.len() == 10 && id.bytes().all(|b| b.is_ascii_digit());
            let Some(id) = id.parse().ok().filter(|_| digits) else {
                return Err(bad("a dictionary id is not 10 decimal digits"));
            };
            return Ok(MetaKey::Dict {
                collection: collection.to_owned(),
                id,
            });
        }
        if let Some(collection) = key_text.strip_prefix(COMPRESS_PREFIX) {
            if !user_name(collection) {
                return Err(bad("a compression setting does not name a collection"));
            }
            return Ok(MetaKey::Compress(collection.to_owned()));
        }
        if let Some(collection) = key_text.strip_prefix(IDS_PREFIX) {
            if !user_name(collection) {
                return Err(bad("an id kind does not name a collection"));
            }
            return Ok(MetaKey::IntIds(collection.to_owned()));
        }
        Err(bad("neither a dictionary nor a setting"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_names_round_trip() {
        for name in [
            "_meta",
            "_packs/orders",
            "_packs/a.b-c_d",
            "_import-4242-0/orders",
            "_import-1-18446744073709551615/x",
        ] {
            let parsed = Internal::parse(name).unwrap();
            assert_eq!(parsed.name(), name);
        }
        let import = Internal::Import {
            pid: 7,
            n: 3,
            target: "t".into(),
        };
        assert_eq!(Internal::parse(&import.name()), Some(import));
        assert_eq!(packs_name("c"), "_packs/c");
    }

    #[test]
    fn internal_parse_rejects_other_names() {
        for name in [
            "orders",
            "_meta2",
            "_packs/",
            "_packs/a/b",
            "_packs/_meta",
            "_import-",
            "_import-1-2",
            "_import-1-2/",
            "_import-1/orders",
            "_import-01-2/orders",
            "_import-1-+2/orders",
            "_import-x-2/orders",
            "_import-1-2/a/b",
            "_other",
        ] {
            assert_eq!(Internal::parse(name), None, "{name}");
        }
        assert!(is_internal("_anything") && !is_internal("orders"));
    }

    #[test]
    fn meta_keys_round_trip() {
        for key in [
            &b"dict/orders/0000000001"[..],
            b"dict/a.b/4294967295",
            b"compress/orders",
        ] {
            assert_eq!(MetaKey::parse(key).unwrap().encode(), key);
        }
        assert_eq!(MetaKey::dict("c", 12), b"dict/c/0000000012");
        assert_eq!(MetaKey::compress("c"), b"compress/c");
        assert_eq!(MetaKey::int_ids("c"), b"ids/c");
        assert_eq!(
            MetaKey::parse(b"ids/c").unwrap(),
            MetaKey::IntIds("c".into())
        );
        assert!(MetaKey::dict("c", 1).starts_with(MetaKey::dicts_of("c").as_bytes()));
        assert!(MetaKey::dict("c", 1).starts_with(MetaKey::DICTS));
    }

    #[test]
    fn meta_parse_rejects_bad_keys_as_bad_meta_keys() {
        for key in [
            &b"dict/orders"[..],
            b"dict/orders/1",
            b"dict/orders/00000000001",
            b"dict/orders/+000000001",
            b"dict/orders/9999999999",
            b"dict//0000000001",
            b"dict/a/b/0000000001",
            b"compress/",
            b"compress/a/b",
            b"other",
            b"\xff",
        ] {
            match MetaKey::parse(key) {
                Err(Error::CorruptMetaKey { .. }) => {}
                other => panic!("{key:?}: {other:?}"),
            }
        }
    }
}

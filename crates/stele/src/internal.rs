//! Internal collections and the keys of the meta collection.

/// The internal collection holding dictionaries (`dict/<collection>/<id, 10 digits>` to the
/// dictionary's bytes) and settings (`compress/<collection>` to `0` or `1`). Its values are
/// raw bytes, not documents.
pub(crate) const META: &str = "_meta";

pub(crate) fn dict_key(collection: &str, id: crate::compress::DictionaryId) -> Vec<u8> {
    format!("{}{id:010}", dict_prefix(collection)).into_bytes()
}

/// The prefix of the meta keys of `collection`'s dictionaries.
pub(crate) fn dict_prefix(collection: &str) -> String {
    format!("dict/{collection}/")
}

/// The collection and dictionary id a meta key names (the inverse of `dict_key`), or `None` if
/// `key` is not a dictionary key.
pub(crate) fn parse_dict_key(key: &[u8]) -> Option<(&str, crate::compress::DictionaryId)> {
    let rest = std::str::from_utf8(key.strip_prefix(b"dict/")?).ok()?;
    let (collection, id) = rest.rsplit_once('/')?;
    Some((collection, id.parse().ok()?))
}

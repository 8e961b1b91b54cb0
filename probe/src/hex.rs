//! Bytes as lowercase hex and back: how NCCL's 128-byte unique id travels in the rendezvous's
//! JSON messages and on a worker's stdin.

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of [`hex`]'s text, or `None` when it is not even-length hex.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hex_round_trips() {
        assert_eq!(hex(&[0, 1, 254, 255]), "0001feff");
        assert_eq!(unhex("0001feff"), Some(vec![0, 1, 254, 255]));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }

    proptest! {
        #[test]
        fn any_text_unhexes_without_panicking(s in "\\PC*") {
            let _ = unhex(&s);
        }

        #[test]
        fn bytes_survive_the_trip(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(unhex(&hex(&b)), Some(b));
        }
    }
}

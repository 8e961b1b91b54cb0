//! Who may join a multi-node run: a join key every node of one job derives alike and no one else
//! can, and the proofs built on it. Node 0 opens every connection with a fresh random nonce; a
//! peer answers with its hello and an HMAC-SHA256 over that nonce and the hello's every field, so
//! the key never crosses the wire, a captured hello fails on the next connection (another nonce),
//! and a changed field (another rank) fails too. Node 0's welcome carries its own HMAC over both
//! nonces, so a peer only takes orders from a node 0 of its own job.
//!
//! The key is HMAC-SHA256(token, label ‖ job): the token is the user's secret (`--dist-token`,
//! `PROBE_DIST_TOKEN`, or one node 0 draws and prints); the job is what the launcher already gave
//! every task of this job alike ([`super::launcher::job_of`]: Slurm's job and step ids, an
//! `mpirun` job's PMIx namespace, torchrun's run id), so a token reused across jobs does not let
//! one job's nodes into another's. Without a token the job alone is the key, which keeps strays and other jobs out
//! but not someone who reads the job id (`squeue`): node 0 says so.

use super::wire::Hello;
use crate::error::{ProbeError, Result};
use crate::hex::{hex, unhex};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Bytes of every nonce (node 0's per connection, the peer's per hello).
pub const NONCE_BYTES: usize = 32;
/// Shortest token accepted: 16 characters (node 0's own are 32 hex digits, 128 random bits).
pub const MIN_TOKEN_CHARS: usize = 16;
/// The environment variable a token may come from (the flag wins).
pub const TOKEN_ENV: &str = "PROBE_DIST_TOKEN";

/// Domain labels, so a proof of one kind is never valid as another.
const KEY_LABEL: &[u8] = b"shardwise probe join key v2\n";
const HELLO_LABEL: &str = "shardwise probe hello v2";
const WELCOME_LABEL: &str = "shardwise probe welcome v2";

/// Where this node's key came from (what node 0 tells the user before it waits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The user's token (flag or environment), bound to the job when the launcher names one.
    Token,
    /// No token: the launcher's job id alone.
    JobOnly,
    /// No token and no job: node 0 drew this token; the other nodes must be given it.
    Drawn(String),
}

/// A job's join key. Never printed: its `Debug` shows only where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinKey {
    key: [u8; 32],
    /// The launcher's job (`slurm job 123 step 0`), empty when none: carried in clear in the
    /// hello so a refusal can say "another job" rather than only "wrong token".
    pub job: String,
    pub source: KeySource,
}

impl std::fmt::Debug for JoinKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinKey")
            .field("job", &self.job)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

fn mac(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length")
}

/// `n` bytes from the operating system's random source.
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| {
        ProbeError::Dist(format!(
            "the operating system gave no random bytes ({e}) for the join nonce or token"
        ))
    })?;
    Ok(b)
}

impl JoinKey {
    /// The key of `token` (may be empty) bound to `job` (may be empty).
    pub fn derive(token: &str, job: &str, source: KeySource) -> JoinKey {
        let mut m = mac(token.as_bytes());
        m.update(KEY_LABEL);
        m.update(job.as_bytes());
        JoinKey {
            key: m.finalize().into_bytes().into(),
            job: job.to_string(),
            source,
        }
    }

    /// This node's key: the user's token, else the launcher's job, else (node 0) a drawn token;
    /// a peer with neither is refused before it measures anything.
    pub fn resolve(token: Option<&str>, job: Option<String>, node_rank: u32) -> Result<JoinKey> {
        let job_text = job.clone().unwrap_or_default();
        if let Some(t) = token {
            let t = t.trim();
            if t.chars().count() < MIN_TOKEN_CHARS {
                return Err(ProbeError::Invalid(format!(
                    "--dist-token / {TOKEN_ENV}: {} characters is too short to keep strangers out; give at least {MIN_TOKEN_CHARS} (e.g. `openssl rand -hex 16`)",
                    t.chars().count()
                )));
            }
            return Ok(JoinKey::derive(t, &job_text, KeySource::Token));
        }
        if job.is_some() {
            return Ok(JoinKey::derive("", &job_text, KeySource::JobOnly));
        }
        if node_rank == 0 {
            let token = hex(&random_bytes::<16>()?);
            let key = JoinKey::derive(&token, "", KeySource::Drawn(token.clone()));
            return Ok(key);
        }
        Err(ProbeError::Invalid(format!(
            "node {node_rank} has no join token: pass the one node 0 printed as --dist-token TOKEN (or {TOKEN_ENV}), or start every node with the same --dist-token"
        )))
    }

    /// The line node 0 prints before it waits, when there is something to say about the key.
    pub fn notice(&self) -> Option<String> {
        match &self.source {
            KeySource::Token => None,
            KeySource::JobOnly => Some(format!(
                "node 0: no --dist-token / {TOKEN_ENV}: only nodes of {} can join, but anyone who can read that id could; export {TOKEN_ENV}=<secret> before the launcher to keep them out",
                self.job
            )),
            KeySource::Drawn(t) => Some(format!(
                "node 0: join token {t}: start the other nodes with --dist-token {t} (or {TOKEN_ENV}={t})"
            )),
        }
    }

    fn hello_mac(&self, nonce: &[u8], hello: &Hello) -> HmacSha256 {
        let unsigned = Hello {
            proof: String::new(),
            ..hello.clone()
        };
        let text =
            serde_json::to_vec(&(HELLO_LABEL, hex(nonce), unsigned)).expect("a hello serializes");
        let mut m = mac(&self.key);
        m.update(&text);
        m
    }

    /// `hello` signed for node 0's `nonce` (its `proof` field filled in).
    pub fn sign_hello(&self, nonce: &[u8], mut hello: Hello) -> Hello {
        hello.proof = hex(&self.hello_mac(nonce, &hello).finalize().into_bytes());
        hello
    }

    /// Whether `hello` proves this key for `nonce` (compared in constant time).
    pub fn verify_hello(&self, nonce: &[u8], hello: &Hello) -> bool {
        unhex(&hello.proof).is_some_and(|p| self.hello_mac(nonce, hello).verify_slice(&p).is_ok())
    }

    fn welcome_mac(&self, nonce: &[u8], peer_nonce: &str) -> HmacSha256 {
        let text = serde_json::to_vec(&(WELCOME_LABEL, hex(nonce), peer_nonce))
            .expect("strings serialize");
        let mut m = mac(&self.key);
        m.update(&text);
        m
    }

    /// Node 0's proof in its welcome: its own `nonce` and the peer's.
    pub fn welcome_proof(&self, nonce: &[u8], peer_nonce: &str) -> String {
        hex(&self.welcome_mac(nonce, peer_nonce).finalize().into_bytes())
    }

    /// Whether a welcome's `proof` is node 0's (compared in constant time).
    pub fn verify_welcome(&self, nonce: &[u8], peer_nonce: &str, proof: &str) -> bool {
        unhex(proof).is_some_and(|p| self.welcome_mac(nonce, peer_nonce).verify_slice(&p).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hello() -> Hello {
        Hello {
            probe_version: "0.1.0".into(),
            schema_version: 2,
            node_rank: 1,
            nnodes: 2,
            hostname: Some("b".into()),
            plan: "quick".into(),
            job: String::new(),
            nonce: "00".repeat(NONCE_BYTES),
            proof: String::new(),
        }
    }

    #[test]
    fn a_proof_holds_for_its_key_nonce_and_fields_only() {
        let key = JoinKey::derive("0123456789abcdef", "", KeySource::Token);
        let nonce = [7u8; NONCE_BYTES];
        let signed = key.sign_hello(&nonce, hello());
        assert!(key.verify_hello(&nonce, &signed));
        // Another nonce (a replay), another token, another job, another field: all fail.
        assert!(!key.verify_hello(&[8u8; NONCE_BYTES], &signed));
        let other = JoinKey::derive("0123456789abcdeF", "", KeySource::Token);
        assert!(!other.verify_hello(&nonce, &signed));
        let other_job = JoinKey::derive("0123456789abcdef", "slurm job 2", KeySource::Token);
        assert!(!other_job.verify_hello(&nonce, &signed));
        let moved = Hello {
            node_rank: 0,
            ..signed.clone()
        };
        assert!(!key.verify_hello(&nonce, &moved));
        let proof = key.welcome_proof(&nonce, &signed.nonce);
        assert!(key.verify_welcome(&nonce, &signed.nonce, &proof));
        assert!(!other.verify_welcome(&nonce, &signed.nonce, &proof));
        assert!(!key.verify_welcome(&nonce, "ff", &proof));
    }

    #[test]
    fn keys_come_from_the_token_the_job_or_a_drawn_token() {
        let t = JoinKey::resolve(Some(" 0123456789abcdef "), None, 1).unwrap();
        assert_eq!(t, JoinKey::derive("0123456789abcdef", "", KeySource::Token));
        assert!(t.notice().is_none());
        let e = JoinKey::resolve(Some("short"), None, 0).unwrap_err();
        assert!(e.to_string().contains("5 characters is too short"), "{e}");
        let j = JoinKey::resolve(None, Some("slurm job 9".into()), 1).unwrap();
        assert_eq!(j.source, KeySource::JobOnly);
        assert!(j.notice().unwrap().contains("export PROBE_DIST_TOKEN"));
        let d = JoinKey::resolve(None, None, 0).unwrap();
        let KeySource::Drawn(tok) = &d.source else {
            panic!("{d:?}")
        };
        assert_eq!(tok.len(), 32);
        assert!(d.notice().unwrap().contains(&format!("--dist-token {tok}")));
        // Two draws differ; a peer with no token and no job is told what to pass.
        assert_ne!(JoinKey::resolve(None, None, 0).unwrap(), d);
        let e = JoinKey::resolve(None, None, 2).unwrap_err().to_string();
        assert!(e.contains("node 2 has no join token"), "{e}");
        assert!(
            !format!("{d:?}").contains("key:"),
            "the key is never printed"
        );
    }

    proptest! {
        /// No hello with an arbitrary proof passes, whatever its bytes.
        #[test]
        fn arbitrary_proofs_never_verify(proof in "\\PC{0,80}", raw in proptest::collection::vec(any::<u8>(), 32)) {
            let key = JoinKey::derive("0123456789abcdef", "", KeySource::Token);
            let nonce = [1u8; NONCE_BYTES];
            for p in [proof, hex(&raw)] {
                let h = Hello { proof: p.clone(), ..hello() };
                prop_assert!(!key.verify_hello(&nonce, &h));
                prop_assert!(!key.verify_welcome(&nonce, "00", &p));
            }
        }
    }
}

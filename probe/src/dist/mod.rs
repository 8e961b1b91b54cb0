//! `probe run` on several nodes. One probe per node, started by the user's launcher; node 0
//! admits the others through a small versioned TCP rendezvous at the init address, every node
//! measures itself as a one-node run would, then the nodes measure NCCL across themselves (the
//! node-0-made unique ids handed out through the rendezvous), and node 0 merges every node's
//! part and the cross-node curves into one profile.
//!
//! Layout: [`launcher`] (rank, world, address: flags or the launcher's environment), [`auth`]
//! (the job's join key and its proofs), [`wire`] (messages), [`frame`] (bounded lines),
//! [`conn`] (streams, heartbeats, the inbox), [`door`] (node 0's listener: strangers turned
//! away), [`rendezvous`] (joining), [`groups`]
//! (the cross-node groups and global device numbering), [`coordinator`] (one group at a time
//! across the nodes), [`merge`] (one profile of all nodes), [`nic`] (interfaces, NCCL's net
//! lines), [`node`] (a node's whole run).

pub mod auth;
pub mod conn;
pub mod coordinator;
pub mod door;
pub mod frame;
pub mod groups;
pub mod launcher;
pub mod merge;
pub mod node;
pub mod rendezvous;
pub mod wire;

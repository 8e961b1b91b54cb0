//! The cross-node step's rendezvous, one group at a time so groups never share the network:
//! node 0 starts group `g` once group `g − 1` is finished (every member node reported) and
//! every member node's worker waits at `g`'s start, with a fresh NCCL unique id; a member that
//! cannot take part (its worker died first) makes node 0 tell the others to skip the group.
//! Node 0 takes part through direct calls ([`Coordinator`] is its [`CrossHooks`]); the other
//! nodes through messages ([`PeerHooks`]).

use super::groups::CrossPlan;
use super::rendezvous::Session;
use super::wire::Msg;
use crate::error::{ProbeError, Result};
use crate::nccl::protocol::{CrossHooks, Directive, GroupReport};
use crate::nic::NetObservation;
use std::collections::{BTreeMap, BTreeSet};

/// Node 0's side.
pub struct Coordinator<'a> {
    session: &'a mut Session,
    plan: &'a CrossPlan,
    unique_id: &'a mut dyn FnMut() -> Result<Vec<u8>>,
    /// Groups before this one are finished.
    next: usize,
    /// Whether group `next` has been started (its members told to go or skip).
    started: bool,
    ready: Vec<BTreeSet<u32>>,
    /// Per group, per member node: its report, or why it has none.
    pub results: Vec<BTreeMap<u32, std::result::Result<GroupReport, String>>>,
    /// Per peer: what its cross-node step said about the network, and its notes.
    pub cross_done: BTreeMap<u32, (NetObservation, Vec<String>)>,
    tick: &'a mut dyn FnMut(String),
}

impl<'a> Coordinator<'a> {
    pub fn new(
        session: &'a mut Session,
        plan: &'a CrossPlan,
        unique_id: &'a mut dyn FnMut() -> Result<Vec<u8>>,
        tick: &'a mut dyn FnMut(String),
    ) -> Coordinator<'a> {
        let n = plan.groups.len();
        Coordinator {
            session,
            plan,
            unique_id,
            next: 0,
            started: false,
            ready: vec![BTreeSet::new(); n],
            results: vec![BTreeMap::new(); n],
            cross_done: BTreeMap::new(),
            tick,
        }
    }

    fn members(&self, g: usize) -> Vec<u32> {
        self.plan.groups[g].nodes()
    }

    fn group_index(&self, id: u32) -> Result<usize> {
        let g = id as usize;
        if g < self.plan.groups.len() {
            Ok(g)
        } else {
            Err(ProbeError::Dist(format!(
                "a node named cross-node group {id}, which the plan does not have"
            )))
        }
    }

    /// Takes one message from a peer into the state.
    fn pump(&mut self) -> Result<()> {
        let Some((from, msg)) = self.session.inbox.next(None)? else {
            return Ok(());
        };
        let who = self.session.inbox.label(from);
        match msg {
            Msg::Ready { group } => {
                let g = self.group_index(group)?;
                self.ready[g].insert(from);
            }
            Msg::GroupDone { group, report } => {
                let g = self.group_index(group)?;
                self.results[g].insert(from, Ok(*report));
            }
            Msg::GroupFailed { group, reason } => {
                let g = self.group_index(group)?;
                self.results[g].insert(from, Err(reason));
            }
            Msg::CrossDone { net, notes } => {
                self.cross_done.insert(from, (net, notes));
            }
            Msg::Abort { reason } => {
                return Err(ProbeError::Dist(format!("{who} stopped: {reason}")));
            }
            other => {
                return Err(ProbeError::Dist(format!(
                    "{who} sent {other:?} during the cross-node step"
                )));
            }
        }
        Ok(())
    }

    /// Tells group `g`'s members to go (or skip); node 0's own directive.
    fn start(&mut self, g: usize) -> Result<Directive> {
        let members = self.members(g);
        let group = &self.plan.groups[g];
        (self.tick)(format!(
            "cross-node {} {:?} ({}/{})",
            group.what,
            group.global_devices,
            g + 1,
            self.plan.groups.len()
        ));
        // Every peer member is at the start, or has said it cannot come.
        while members
            .iter()
            .any(|m| *m != 0 && !self.ready[g].contains(m) && !self.results[g].contains_key(m))
        {
            self.pump()?;
        }
        let failed: Vec<String> = members
            .iter()
            .filter_map(|m| match self.results[g].get(m) {
                Some(Err(why)) => Some(format!("node {m}: {why}")),
                _ => None,
            })
            .collect();
        let directive = if failed.is_empty() {
            Directive::Go((self.unique_id)()?)
        } else {
            Directive::Skip(format!(
                "a member node cannot take part ({})",
                failed.join("; ")
            ))
        };
        let msg = match &directive {
            Directive::Go(id) => Msg::Go {
                group: g as u32,
                unique_id: crate::hex::hex(id),
            },
            Directive::Skip(reason) => Msg::Skip {
                group: g as u32,
                reason: reason.clone(),
            },
        };
        for m in members
            .iter()
            .filter(|m| **m != 0 && self.ready[g].contains(m))
        {
            self.session.peer(*m)?.send(&msg)?;
        }
        self.started = true;
        Ok(directive)
    }

    /// Waits until every member node of group `g` has reported on it.
    fn finish(&mut self, g: usize) -> Result<()> {
        let members = self.members(g);
        if members.contains(&0) && !self.results[g].contains_key(&0) {
            // Node 0's own worker never reached or reported it.
            self.results[g].insert(0, Err("node 0's worker did not report it".into()));
        }
        while members.iter().any(|m| !self.results[g].contains_key(m)) {
            self.pump()?;
        }
        self.next = g + 1;
        self.started = false;
        Ok(())
    }

    /// Finishes every group before `target` (all groups for `None`), then starts `target`.
    fn advance_to(&mut self, target: Option<usize>) -> Result<Option<Directive>> {
        let end = target.unwrap_or(self.plan.groups.len());
        while self.next < end {
            let g = self.next;
            if !self.started {
                self.start(g)?;
            }
            self.finish(g)?;
        }
        match target {
            Some(t) if t == self.next && !self.started => self.start(t).map(Some),
            Some(t) => Err(ProbeError::Dist(format!(
                "node 0's worker asked for cross-node group {t} out of order (at {})",
                self.next
            ))),
            None => Ok(None),
        }
    }

    /// After node 0's own part: every remaining group, then every peer's closing word.
    pub fn finish_all(&mut self) -> Result<()> {
        self.advance_to(None)?;
        let peers: Vec<u32> = self.session.peers.keys().copied().collect();
        while peers.iter().any(|p| !self.cross_done.contains_key(p)) {
            self.pump()?;
        }
        Ok(())
    }
}

impl CrossHooks for Coordinator<'_> {
    fn ready(&mut self, group: u32) -> Result<Directive> {
        let g = self.group_index(group)?;
        Ok(self
            .advance_to(Some(g))?
            .expect("a target gives a directive"))
    }

    fn report(&mut self, group: u32, report: GroupReport) -> Result<()> {
        let g = self.group_index(group)?;
        self.results[g].insert(0, Ok(report));
        Ok(())
    }

    fn failed(&mut self, group: u32, why: String) -> Result<()> {
        let g = self.group_index(group)?;
        self.results[g].insert(0, Err(why));
        Ok(())
    }
}

/// A peer's side: every hook is a message to node 0 (and, for `ready`, its answer).
pub struct PeerHooks<'a> {
    pub session: &'a mut Session,
}

impl CrossHooks for PeerHooks<'_> {
    fn ready(&mut self, group: u32) -> Result<Directive> {
        self.session.peer(0)?.send(&Msg::Ready { group })?;
        loop {
            match self.session.inbox.next(None)? {
                Some((
                    _,
                    Msg::Go {
                        group: g,
                        unique_id,
                    },
                )) if g == group => {
                    return crate::hex::unhex(&unique_id)
                        .filter(|b| b.len() == 128)
                        .map(Directive::Go)
                        .ok_or_else(|| {
                            ProbeError::Dist("node 0 sent a malformed NCCL unique id".into())
                        });
                }
                Some((_, Msg::Skip { group: g, reason })) if g == group => {
                    return Ok(Directive::Skip(reason));
                }
                Some((_, Msg::Abort { reason })) => {
                    return Err(ProbeError::Dist(format!("node 0 stopped: {reason}")));
                }
                Some((_, other)) => {
                    return Err(ProbeError::Dist(format!(
                        "node 0 sent {other:?} while this node waited for group {group}"
                    )));
                }
                None => {}
            }
        }
    }

    fn report(&mut self, group: u32, report: GroupReport) -> Result<()> {
        self.session.peer(0)?.send(&Msg::GroupDone {
            group,
            report: Box::new(report),
        })
    }

    fn failed(&mut self, group: u32, why: String) -> Result<()> {
        self.session
            .peer(0)?
            .send(&Msg::GroupFailed { group, reason: why })
    }
}

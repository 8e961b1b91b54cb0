//! `sim advise`'s verdicts as odds: each question's two predictions with their 80% intervals
//! from the stored error model ([`crate::uncertainty`]) and the chance the predicted-faster option
//! is faster, or "Depends: measure both" with the measurement that decides.

use crate::advise::EpAnswer;
use crate::advise::mtp::MtpAnswer;
use crate::advise::replicas::ReplicasAnswer;
use crate::cost::spec::AcceptSource;
use crate::scenario::Scenario;
use crate::uncertainty::verdict::{Choice, odds};
use crate::uncertainty::{ErrorModel, Flag, Load, Regime};

/// The regime of a steady-decode prediction of this setup, `speculation` `off` or where the
/// acceptance came from. Without a speculative step to leave unpriced: the launch's options may
/// speculate where the answer's side does not, so that ground is the answer's to set
/// ([`speculating`]).
fn regime(setup: &Scenario, speculation: &str, concurrency: u32, context: u32) -> Regime {
    let mut r = setup.regime(
        &setup.opts,
        None,
        Load {
            family: "llm_decode_bench",
            concurrency,
            context_tokens: context,
        },
    );
    r.speculation = speculation.into();
    r.flags
        .retain(|f| !Flag::UNPRICED_STEPS.iter().any(|u| u.name() == f));
    r
}

/// [`regime`] of the side that speculates: a verify step the answer says is not priced
/// (`caveat`) stands on that ground, as the same prediction's record does in `validate` (its
/// error has a sign: the step costs more).
fn speculating(
    setup: &Scenario,
    accept: &str,
    concurrency: u32,
    context: u32,
    caveat: Option<&str>,
) -> Regime {
    let mut r = regime(setup, accept, concurrency, context);
    if let Some(f) = caveat.and_then(Flag::of_spec_caveat) {
        r.flags.push(f.name().to_string());
    }
    r
}

/// `bench_serving` at the answer's load on one server's flags.
fn measure(flags: &str, concurrency: u32) -> String {
    format!("bench_serving --max-concurrency {concurrency} against `{flags}`")
}

/// The EP verdict's odds at the workload's concurrency.
pub fn ep(setup: &Scenario, workload: &crate::workload::Workload, a: &mut EpAnswer) {
    let Some(at) = a
        .by_concurrency
        .iter()
        .find(|p| p.concurrency == a.concurrency)
    else {
        return;
    };
    // the context the EP question's grid decodes at
    let context = workload.random_input_len + workload.random_output_len / 2;
    let r = regime(setup, "off", a.concurrency, context);
    let (me, mo) = (
        measure(&a.ep.flags, a.concurrency),
        measure(&a.other.flags, a.concurrency),
    );
    a.odds = Some(odds(
        ErrorModel::builtin(),
        Choice {
            name: &a.ep.layout,
            tok_s: at.ep_tok_s,
            regime: &r,
            measure: &me,
        },
        Choice {
            name: &a.other.layout,
            tok_s: at.other_tok_s,
            regime: &r,
            measure: &mo,
        },
    ));
}

/// The MTP verdict's odds at the workload's concurrency: the speculative side carries where its
/// acceptance length came from.
pub fn mtp(setup: &Scenario, a: &mut MtpAnswer) {
    let accept = match a.plan.accept_source {
        AcceptSource::Prior => "prior",
        AcceptSource::Given | AcceptSource::Measured | AcceptSource::Forced => "measured",
    };
    let (on, off) = (
        speculating(
            setup,
            accept,
            a.concurrency,
            a.context_tokens,
            a.caveat.as_deref(),
        ),
        regime(setup, "off", a.concurrency, a.context_tokens),
    );
    let (mw, mo) = (
        measure(&a.flags_with_speculation(), a.concurrency),
        measure(&a.layout, a.concurrency),
    );
    a.odds = Some(odds(
        ErrorModel::builtin(),
        Choice {
            name: crate::advise::mtp::WITH_SPECULATION,
            tok_s: a.at.with_tok_s,
            regime: &on,
            measure: &mw,
        },
        Choice {
            name: "without",
            tok_s: a.at.without_tok_s,
            regime: &off,
            measure: &mo,
        },
    ));
}

/// One server against two: the box's tokens/s of each.
pub fn replicas(setup: &Scenario, a: &mut ReplicasAnswer) {
    let Some(two) = &a.two else {
        return;
    };
    let whole = regime(setup, "off", a.concurrency, a.context_tokens);
    let half = regime(setup, "off", a.concurrency.div_ceil(2), a.context_tokens);
    let (m1, m2) = (
        measure(&a.one.flags, a.concurrency),
        measure(
            &format!(
                "{} {}",
                two.flags,
                setup.opts.engine.rules().replicas_flag(2)
            ),
            a.concurrency,
        ),
    );
    a.odds = Some(odds(
        ErrorModel::builtin(),
        Choice {
            name: crate::advise::replicas::ONE_SERVER,
            tok_s: a.one.box_tok_s,
            regime: &whole,
            measure: &m1,
        },
        Choice {
            name: crate::advise::replicas::TWO_SERVERS,
            tok_s: two.box_tok_s,
            regime: &half,
            measure: &m2,
        },
    ));
}

/// The scale answer's best option against the runner-up, each a full simulated run.
pub fn scale(
    setup: &Scenario,
    workload: &crate::workload::Workload,
    a: &mut crate::advise::scale::ScaleAnswer,
) {
    let mut opts: Vec<&crate::advise::scale::ScaleOption> = a
        .one_box
        .iter()
        .chain(std::iter::once(&a.all_boxes))
        .chain(a.replicas.iter())
        .collect();
    opts.sort_by(|x, y| y.output_throughput.total_cmp(&x.output_throughput));
    let [best, next, ..] = opts.as_slice() else {
        return;
    };
    let regime_of = |o: &crate::advise::scale::ScaleOption| {
        let per_server = o.concurrency_per_server.iter().copied().max().unwrap_or(1);
        setup.regime(
            &setup.opts,
            None,
            Load {
                family: "bench_serving",
                concurrency: per_server,
                context_tokens: workload.random_input_len,
            },
        )
    };
    let (rb, rn) = (regime_of(best), regime_of(next));
    let (mb, mn) = (
        measure(&best.flags, a.concurrency),
        measure(&next.flags, a.concurrency),
    );
    let odds = odds(
        ErrorModel::builtin(),
        Choice {
            name: &best.layout,
            tok_s: best.output_throughput,
            regime: &rb,
            measure: &mb,
        },
        Choice {
            name: &next.layout,
            tok_s: next.output_throughput,
            regime: &rn,
            measure: &mn,
        },
    );
    a.odds = Some(odds);
}

/// The P2P verdict's odds: the row the machine runs now against the best other row, each with the
/// P2P state it runs in and how that machine is known (the states the machine is not in are
/// built by `crate::p2p_variant`: synthesized; `real` from the measured bare-metal preset). The box
/// is one box: a source offset is shared whole.
pub fn p2p(
    setup: &Scenario,
    workload: &crate::workload::Workload,
    a: &mut crate::advise::p2p::P2pAnswer,
) {
    let Some((cur, other)) = a.contenders() else {
        return;
    };
    let concurrency = workload.max_concurrency.unwrap_or(workload.num_prompts);
    let base = setup.regime(
        &setup.opts,
        None,
        Load {
            family: "bench_serving",
            concurrency,
            context_tokens: workload.random_input_len,
        },
    );
    let regime_of = |r: &crate::advise::p2p::P2pRow| {
        let mut g = base.clone();
        if r.machine != setup.machine.name() {
            g.p2p = r.state.to_string();
            g.machine_kind = if r.state == models::profile::P2pState::Real {
                "preset measured"
            } else {
                "preset synthesized"
            }
            .into();
        }
        g
    };
    let (rc, ro) = (regime_of(cur), regime_of(other));
    let name = |r: &crate::advise::p2p::P2pRow| format!("P2P {} with {}", r.state, r.all_reduce);
    let (nc, no) = (name(cur), name(other));
    let (mc, mo) = (
        format!("bench_serving --max-concurrency {concurrency} as the machine runs now"),
        format!(
            "bench_serving --max-concurrency {concurrency} in P2P {} with {}",
            other.state, other.all_reduce
        ),
    );
    a.odds = Some(odds(
        ErrorModel::builtin(),
        Choice {
            name: &nc,
            tok_s: cur.output_tok_s.unwrap_or(0.0),
            regime: &rc,
            measure: &mc,
        },
        Choice {
            name: &no,
            tok_s: other.output_tok_s.unwrap_or(0.0),
            regime: &ro,
            measure: &mo,
        },
    ));
}

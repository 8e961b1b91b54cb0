//! `sim advise`'s orchestration is a library call on a `Scenario` (issue 33, Build 2): the
//! layouts ranked, a question answered or refused with a typed error, the advice assembled,
//! without the command line.

use models::{Layout, ModelSpec};
use sim::cost::IterationModel;
use sim::engine::Launch;
use sim::engine::sglang::args::{Origin, from_words};
use sim::machine::Machine;
use sim::scenario::Scenario;
use sim::scenario::advice::{AdviseError, Answers, AskedOf, Question};
use sim::sweep::SweepLayout;
use sim::workload::Workload;

fn scenario(model: &str) -> Scenario {
    let machine = Machine::resolve("rtx-pro-6000-x8-baremetal").unwrap();
    let spec = ModelSpec::preset(model).unwrap();
    let sglang = from_words(&[], Origin::CommandLine).unwrap();
    Scenario::new(machine, spec, Launch::Sglang(sglang), Layout::tp(8)).unwrap()
}

fn layouts(s: &Scenario, ls: &[Layout]) -> Vec<SweepLayout> {
    ls.iter()
        .map(|&l| {
            let m = s
                .model_ranking(l, s.knobs)
                .map(|m| Box::new(m) as Box<dyn IterationModel>)
                .map_err(|e| e.to_string());
            SweepLayout::new(&s.machine, l, m)
        })
        .collect()
}

fn workload() -> Workload {
    Workload {
        num_prompts: 16,
        random_input_len: 500,
        random_output_len: 50,
        max_concurrency: Some(4),
        ..Workload::default()
    }
}

#[test]
fn advice_is_ranked_and_a_question_refused_in_the_library() {
    let s = scenario("llama-3.1-70b");
    let ls = layouts(&s, &[Layout::tp(8), Layout::tp(4)]);
    let w = workload();
    let ranking = s.rank_layouts(&ls, &w).unwrap();
    assert_eq!(ranking.len(), 2);
    assert!(ranking.iter().all(|r| r.run.is_some()), "{ranking:?}");
    // a dense model has no EP question: a typed error, the sentence the command prints
    let asked = AskedOf {
        layouts: &ls,
        ranking: &ranking,
        workload: &w,
        prompt_kind: sim::acceptance::PromptKind::Random,
        draws: 2,
        observed: &[],
    };
    let e = s.answer_question(Question::Ep, &asked).unwrap_err();
    assert!(matches!(e, AdviseError::Dense { .. }), "{e}");
    assert!(e.to_string().contains("is dense"), "{e}");
    let advice = s.advice(w, ranking, Answers::default(), "given", Vec::new());
    assert_eq!(advice.engine, sim::engine::Engine::Sglang);
    assert_eq!(advice.ranking.len(), 2);
}

#[test]
fn no_layout_that_runs_is_a_typed_error() {
    let s = scenario("llama-3.1-405b");
    let ls = vec![SweepLayout::new(
        &s.machine,
        Layout::tp(1),
        Err("does not fit".into()),
    )];
    let e = s.rank_layouts(&ls, &workload()).unwrap_err();
    assert!(matches!(e, AdviseError::NoLayoutRuns { .. }), "{e}");
    assert!(e.to_string().contains("does not fit"), "{e}");
}

//! Property: whatever text callers pass (markup, quotes, control characters, any Unicode), every
//! chart stays well-formed XML and shows the text, minus control characters, verbatim.

use crate::fixtures;
use crate::svg_support;

use proptest::prelude::*;
use reports::style::clean_text;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_label_is_text_in_every_chart(label in "\\PC{0,12}[<>&\"'\\x01]{1,4}\\PC{0,12}") {
        let shown = clean_text(&label).trim().to_owned();
        let mut map = fixtures::p2p_bandwidth();
        map.title = label.clone();
        map.row_labels[3] = label.clone();
        let mut lines = fixtures::throughput();
        lines.series[5].name = label.clone();
        let mut bars = fixtures::memory();
        bars.reference_label = label.clone();
        let mut scatter = fixtures::predicted_vs_measured();
        scatter.series[0].name = label.clone();
        for svg in [
            reports::heat_map(&map).unwrap(),
            reports::line_chart(&lines).unwrap(),
            reports::memory_bars(&bars).unwrap(),
            reports::scatter_chart(&scatter).unwrap(),
        ] {
            let texts = svg_support::texts(&svg);
            prop_assert!(texts.contains(&shown), "{shown:?} not among {texts:?}");
        }
        let html = reports::html::Page::new(label.clone()).paragraph(label).render().unwrap();
        let opt = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
        let doc = roxmltree::Document::parse_with_options(&html, opt).unwrap();
        let p = doc.descendants().find(|n| n.has_tag_name("p")).unwrap();
        prop_assert_eq!(p.text().unwrap_or("").trim(), shown.as_str());
    }
}

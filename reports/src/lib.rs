//! A small chart vocabulary rendered to SVG with `plotters`: heat maps, line charts over log sizes,
//! stacked bars. It knows nothing of LLMs: callers hand it plain series and matrices.

//! `probe`: measures a GPU box — P2P paths, host bounce, NCCL collectives, compute ceilings — into
//! a versioned machine profile (`models::profile`). Public errors never name the CUDA bindings.

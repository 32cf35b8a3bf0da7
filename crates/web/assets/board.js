// board: see assets.rs

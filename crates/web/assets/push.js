// push: see assets.rs

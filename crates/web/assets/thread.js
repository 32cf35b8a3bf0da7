// thread: see assets.rs

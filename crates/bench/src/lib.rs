//! The parts of `paperclip-bench` that the test suite shares: the chaos
//! driver runs as `paperclip-bench chaos` and, shorter, as a test, and the
//! suite waits on conditions through `poll::until`. The scale bench
//! (`paperclip-bench scale`) also runs, tiny, as a test.

pub mod chaos;
pub mod fleet;
pub mod poll;
pub mod scale;

//! The parts of `paperclip-bench` that the test suite shares: the chaos
//! driver runs as `paperclip-bench chaos` and, shorter, as a test.

pub mod chaos;

//! trybuild compile-fail cases for cuda-embed; see tests/ui.rs.

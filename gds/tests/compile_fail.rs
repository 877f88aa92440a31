//! Programs that would read unmapped memory do not compile: each file in compile-fail/ is one
//! such program, and its .stderr the borrow error rustc must give (not just any error);
//! compile-pass/ holds the same reads without the early drop, which do compile.

#[test]
fn values_cannot_outlive_their_reader_or_pin() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile-fail/*.rs");
    t.pass("tests/compile-pass/*.rs");
}

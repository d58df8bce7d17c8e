use super::symbols::{self, Var};

#[test]
fn demangles_simple_functions() {
    assert_eq!(symbols::demangle("_Z2sqf"), "sq(float)");
    assert_eq!(symbols::demangle("_ZN2ns4axpyEfPKfPfi"), "ns::axpy(float, const float*, float*, int)");
    assert_eq!(symbols::demangle("_Z1fv"), "f()");
    assert_eq!(symbols::demangle("plain_c"), "plain_c");
    assert_eq!(symbols::base_name("_ZN2ns2sqEd"), "ns::sq");
    assert_eq!(symbols::base_name("sq"), "sq");
}

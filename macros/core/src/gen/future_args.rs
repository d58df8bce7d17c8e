//! The arguments of the `*_async` launchers: those of the blocking launcher, with each borrowed
//! buffer or view borrowed for the future's lifetime `'__a`, so the future keeps them borrowed
//! (what it returns is `GpuFuture<'__a>`).

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;

/// `name: &T` as `name: &'__a T` (`&mut T` as `&'__a mut T`); an argument taken by value
/// (`n: i32`) is returned as it is.
pub fn borrowed(arg: &TokenStream) -> TokenStream {
    let tokens: Vec<TokenTree> = arg.clone().into_iter().collect();
    match tokens.as_slice() {
        [name, colon, TokenTree::Punct(amp), rest @ ..] if amp.as_char() == '&' => {
            let rest: TokenStream = rest.iter().cloned().collect();
            quote!(#name #colon & '__a #rest)
        }
        _ => arg.clone(),
    }
}

/// The name of an argument `name: T`, to pass it on.
pub fn name(arg: &TokenStream) -> TokenStream {
    arg.clone().into_iter().take(1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_borrowed_for_the_future() {
        let shared = borrowed(&quote!(x: &impl params::x<f32>));
        assert_eq!(shared.to_string(), quote!(x: &'__a impl params::x<f32>).to_string());
        let exclusive = borrowed(&quote!(y: &mut impl ::cuda_embed::NdOutput<f32>));
        assert_eq!(exclusive.to_string(), quote!(y: &'__a mut impl ::cuda_embed::NdOutput<f32>).to_string());
        let value = quote!(n: ::core::primitive::i32);
        assert_eq!(borrowed(&value).to_string(), value.to_string());
        assert_eq!(name(&exclusive).to_string(), "y");
    }
}

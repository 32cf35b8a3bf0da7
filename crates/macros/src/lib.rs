//! `#[handler]`: an `async fn` route handler that returns its future boxed.
//!
//! Why: axum wraps every handler in about ten generic layers (handler
//! service, response mapping, boxed clone service, future mapping, ...), and
//! the compiler proves `Send` and resolves the handler's `impl Future` again
//! at each layer, walking the whole async state machine every time. With
//! ~350 handlers that was 78 s of the server crate's 126 s build (measured
//! with `-Z self-profile`: `monomorphization_collector`), paid twice (the
//! library and its unit tests). A boxed future is one concrete type: the
//! walk happens once, where the future is boxed. The cost at run time is one
//! allocation per request.

use proc_macro::TokenStream;
use quote::quote;
use syn::{parse_macro_input, ItemFn, ReturnType};

#[proc_macro_attribute]
pub fn handler(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[handler] takes no arguments",
        )
        .to_compile_error()
        .into();
    }
    let mut f = parse_macro_input!(item as ItemFn);
    if f.sig.asyncness.is_none() {
        return syn::Error::new_spanned(f.sig.fn_token, "#[handler] is for an async fn")
            .to_compile_error()
            .into();
    }
    f.sig.asyncness = None;
    let output = match &f.sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    };
    f.sig.output = syn::parse_quote!(
        -> ::std::pin::Pin<::std::boxed::Box<
            dyn ::std::future::Future<Output = #output> + ::std::marker::Send + 'static>>
    );
    let body = &f.block;
    // The block's type is named where it can be (`impl Trait` cannot be a
    // binding's type), so `?` and `return` inside it know what they build.
    let named = !output.to_string().contains("impl ");
    f.block = if named {
        syn::parse_quote!({
            ::std::boxed::Box::pin(async move {
                let out: #output = #body;
                out
            })
        })
    } else {
        syn::parse_quote!({ ::std::boxed::Box::pin(async move #body) })
    };
    quote!(#f).into()
}

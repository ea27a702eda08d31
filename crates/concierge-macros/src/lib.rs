//! `#[tool]`: turns an `async fn` into a concierge tool.
//!
//! ```ignore
//! /// Adds two integers.
//! #[tool(name = "add", category = "math", read_only, cacheable, provides = ["sum"])]
//! async fn add(args: AddArgs) -> Result<i64, String> { Ok(args.a + args.b) }
//! // generates `struct Add;` implementing `concierge::Tool`, with
//! // `Add::NAME == "add"` and `Add::plan(AddArgs { a: 2, b: 3 })`, a
//! // `concierge::core::PlannedCall` for custom planners and tests
//! ```
//!
//! The function takes its arguments struct (deriving `Deserialize` and
//! `JsonSchema`) and optionally a `concierge::ToolContext`; it returns a
//! `Result<T, E>` (`T: Serialize`, `E: Display` or `ToolError`) or a plain
//! `T: Serialize`. The doc comment is the description. Attributes: `name`,
//! `category`, `description`, the flags `read_only`, `destructive`,
//! `idempotent`, `requires_confirmation`, `cacheable`, the lists
//! `requires` and `provides` (blackboard keys), `writes` (what calls
//! write: calls of one batch that write the same thing run in turn), and `confirm = "..."`: the
//! question the person answers before a call runs, with `{argument}`
//! placeholders ("I'll create a task '{title}' due {due}. Proceed?"); it
//! implies `requires_confirmation`.
//!
//! The generated struct also has `NAME` (the tool's name) and a typed
//! `plan(args)`: the compiler checks that `args` is the tool's argument type,
//! and the call carries the tool's name and the arguments serialized to JSON
//! (the argument type must implement `Serialize` for `plan` to be used;
//! tools whose arguments do not can still be declared, they just have no
//! typed plan). A custom `Planner` returns these calls in
//! `Plan::CallTools`; the core checks them like any other call.

use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, ExprArray, FnArg, Ident, ItemFn, Lit, LitStr, ReturnType, Type, parse_macro_input};

#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    category: Option<LitStr>,
    description: Option<LitStr>,
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    requires_confirmation: bool,
    cacheable: bool,
    requires: Vec<LitStr>,
    provides: Vec<LitStr>,
    writes: Vec<LitStr>,
    confirm: Option<LitStr>,
}

fn strings(array: &ExprArray) -> syn::Result<Vec<LitStr>> {
    array
        .elems
        .iter()
        .map(|e| match e {
            Expr::Lit(lit) => match &lit.lit {
                Lit::Str(s) => Ok(s.clone()),
                other => Err(syn::Error::new(other.span(), "expected a string")),
            },
            other => Err(syn::Error::new(other.span(), "expected a string")),
        })
        .collect()
}

/// Makes an `async fn` a concierge tool. See the crate docs.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        let flag = |field: &mut bool| {
            *field = true;
            Ok(())
        };
        if meta.path.is_ident("name") {
            options.name = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("category") {
            options.category = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("description") {
            options.description = Some(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("read_only") {
            flag(&mut options.read_only)
        } else if meta.path.is_ident("destructive") {
            flag(&mut options.destructive)
        } else if meta.path.is_ident("idempotent") {
            flag(&mut options.idempotent)
        } else if meta.path.is_ident("requires_confirmation") {
            flag(&mut options.requires_confirmation)
        } else if meta.path.is_ident("cacheable") {
            flag(&mut options.cacheable)
        } else if meta.path.is_ident("requires") {
            options.requires = strings(&meta.value()?.parse()?)?;
            Ok(())
        } else if meta.path.is_ident("provides") {
            options.provides = strings(&meta.value()?.parse()?)?;
            Ok(())
        } else if meta.path.is_ident("writes") {
            options.writes = strings(&meta.value()?.parse()?)?;
            Ok(())
        } else if meta.path.is_ident("confirm") {
            let template: LitStr = meta.value()?.parse()?;
            if template.value().trim().is_empty() {
                return Err(syn::Error::new(
                    template.span(),
                    "the confirmation question is empty; write what the person is asked, e.g. \
                     \"Create a task '{title}'?\"",
                ));
            }
            options.confirm = Some(template);
            options.requires_confirmation = true;
            Ok(())
        } else {
            Err(meta.error(
                "unknown #[tool] option; expected name, category, description, read_only, destructive, \
                 idempotent, requires_confirmation, cacheable, requires, provides, writes or confirm",
            ))
        }
    });
    parse_macro_input!(attr with parser);
    let function = parse_macro_input!(item as ItemFn);
    match expand(options, function) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

fn pascal_case(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut chars = p.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

fn doc_of(function: &ItemFn) -> String {
    let lines: Vec<String> = function
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.trim().to_string())
        .collect();
    // Lines of a paragraph join with spaces; blank lines separate paragraphs.
    let mut text = String::new();
    for line in lines {
        if line.is_empty() {
            if !text.ends_with("\n\n") && !text.is_empty() {
                text.push_str("\n\n");
            }
        } else {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push(' ');
            }
            text.push_str(&line);
        }
    }
    text.trim().to_string()
}

fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path.path.segments.last().is_some_and(|s| s.ident == "Result"),
        _ => false,
    }
}

fn expand(options: Options, function: ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(sig.fn_token.span(), "#[tool] needs an `async fn`"));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "#[tool] functions cannot be generic",
        ));
    }
    let mut inputs = sig.inputs.iter();
    let args_ty = match inputs.next() {
        Some(FnArg::Typed(arg)) => (*arg.ty).clone(),
        Some(other) => return Err(syn::Error::new(other.span(), "#[tool] functions take no `self`")),
        None => {
            return Err(syn::Error::new(
                sig.ident.span(),
                "#[tool] functions take an arguments struct (deriving Deserialize and JsonSchema)",
            ));
        }
    };
    let takes_context = match inputs.next() {
        Some(FnArg::Typed(_)) => true,
        Some(other) => return Err(syn::Error::new(other.span(), "unexpected argument")),
        None => false,
    };
    if let Some(extra) = inputs.next() {
        return Err(syn::Error::new(
            extra.span(),
            "#[tool] functions take the arguments struct and, optionally, a ToolContext",
        ));
    }
    let fn_name = &sig.ident;
    let vis = &function.vis;
    let struct_name = Ident::new(&pascal_case(&fn_name.to_string()), fn_name.span());
    let tool_name = options
        .name
        .unwrap_or_else(|| LitStr::new(&fn_name.to_string(), Span::call_site()));
    let description = match options.description {
        Some(d) => d,
        None => {
            let doc = doc_of(&function);
            if doc.is_empty() {
                return Err(syn::Error::new(
                    fn_name.span(),
                    "#[tool] needs a description: write a doc comment or `description = \"...\"`",
                ));
            }
            LitStr::new(&doc, Span::call_site())
        }
    };
    let category = match options.category {
        Some(c) => quote!(::core::option::Option::Some(::std::string::String::from(#c))),
        None => quote!(::core::option::Option::None),
    };
    let (ro, de, id, rc, ca) = (
        options.read_only,
        options.destructive,
        options.idempotent,
        options.requires_confirmation,
        options.cacheable,
    );
    let requires = &options.requires;
    let provides = &options.provides;
    let writes = &options.writes;
    let confirm = match &options.confirm {
        Some(template) => quote!(::core::option::Option::Some(::std::string::String::from(#template))),
        None => quote!(::core::option::Option::None),
    };
    let call_args = if takes_context { quote!(args, cx) } else { quote!(args) };
    let returns_result = match &sig.output {
        ReturnType::Type(_, ty) => is_result(ty),
        ReturnType::Default => false,
    };
    let body = if returns_result {
        quote! {
            match #fn_name(#call_args).await {
                ::core::result::Result::Ok(value) => ::concierge::tool::__private::to_value(value),
                ::core::result::Result::Err(error) => {
                    #[allow(unused_imports)]
                    use ::concierge::tool::__private::{ViaDisplay as _, ViaToolError as _};
                    ::core::result::Result::Err((&&::concierge::tool::__private::Wrap(error)).into_tool_error())
                }
            }
        }
    } else {
        quote!(::concierge::tool::__private::to_value(#fn_name(#call_args).await))
    };
    let struct_doc = format!(
        "The `{}` tool (generated by `#[tool]` from [`{}`]).",
        tool_name.value(),
        fn_name
    );
    let unused = format_ident!("_unused_context");
    let silence = if takes_context {
        quote!()
    } else {
        quote!(let #unused = cx;)
    };
    let plan_doc = format!(
        "Plans a call of `{}` with typed arguments: the name and the arguments serialized to JSON, \
         for a custom planner's `Plan::CallTools` (the compiler checks the argument type; the \
         core checks the call like any other).",
        tool_name.value()
    );
    Ok(quote! {
        #function

        #[doc = #struct_doc]
        #[derive(Clone, Copy, Debug, Default)]
        #vis struct #struct_name;

        #[allow(dead_code)]
        impl #struct_name {
            /// The tool's name, as planners and models call it.
            #vis const NAME: &'static str = #tool_name;

            #[doc = #plan_doc]
            #vis fn plan<A>(args: A) -> ::concierge::core::PlannedCall
            where
                Self: ::concierge::Tool<Args = A>,
                A: ::concierge::core::__private::serde::Serialize,
            {
                ::concierge::core::PlannedCall::typed(#tool_name, &args)
            }
        }

        impl ::concierge::Tool for #struct_name {
            type Args = #args_ty;

            fn spec(&self) -> ::concierge::ToolSpec {
                let mut spec = ::concierge::ToolSpec::new(
                    #tool_name,
                    #description,
                    ::concierge::tool::schema_for::<#args_ty>(),
                );
                spec.category = #category;
                spec.annotations = ::concierge::ToolAnnotations {
                    read_only: #ro,
                    destructive: #de,
                    idempotent: #id,
                    requires_confirmation: #rc,
                    cacheable: #ca,
                };
                spec.requires = ::std::vec![#(::std::string::String::from(#requires)),*];
                spec.provides = ::std::vec![#(::std::string::String::from(#provides)),*];
                spec.writes = ::std::vec![#(::std::string::String::from(#writes)),*];
                spec.confirm = #confirm;
                spec
            }

            fn call(
                &self,
                args: Self::Args,
                cx: ::concierge::ToolContext,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<::concierge::__private::serde_json::Value, ::concierge::ToolError>,
            > + ::core::marker::Send {
                async move {
                    #silence
                    #body
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn expand_str(options: Options, function: ItemFn) -> String {
        expand(options, function).unwrap().to_string()
    }

    #[test]
    fn names_become_pascal_case_structs() {
        assert_eq!(pascal_case("calculator"), "Calculator");
        assert_eq!(pascal_case("search_flights"), "SearchFlights");
        assert_eq!(pascal_case("__odd__name"), "OddName");
    }

    #[test]
    fn the_struct_gets_its_name_and_a_typed_plan() {
        let function: ItemFn = syn::parse_quote! {
            /// Multiplies.
            pub async fn calculator(args: CalcArgs) -> Result<i64, String> { Ok(args.a * args.b) }
        };
        let code = expand_str(Options::default(), function);
        assert!(code.contains("pub struct Calculator"), "{code}");
        assert!(
            code.contains("pub const NAME : & 'static str = \"calculator\""),
            "{code}"
        );
        assert!(
            code.contains("pub fn plan < A > (args : A) -> :: concierge :: core :: PlannedCall"),
            "{code}"
        );
        assert!(code.contains("Self : :: concierge :: Tool < Args = A >"), "{code}");
        assert!(
            code.contains("PlannedCall :: typed (\"calculator\" , & args)"),
            "{code}"
        );
    }

    #[test]
    fn a_renamed_tool_plans_under_its_declared_name() {
        let function: ItemFn = syn::parse_quote! {
            /// Adds.
            async fn add_numbers(args: AddArgs) -> i64 { args.a + args.b }
        };
        let options = Options {
            name: Some(LitStr::new("add", Span::call_site())),
            ..Options::default()
        };
        let code = expand_str(options, function);
        assert!(code.contains("const NAME : & 'static str = \"add\""), "{code}");
        assert!(code.contains("PlannedCall :: typed (\"add\" , & args)"), "{code}");
    }

    #[test]
    fn misuse_is_a_compile_error_that_says_what_to_do() {
        let not_async: ItemFn = syn::parse_quote! {
            /// Adds.
            fn add(args: AddArgs) -> i64 { 0 }
        };
        let error = expand(Options::default(), not_async).unwrap_err().to_string();
        assert!(error.contains("needs an `async fn`"), "{error}");
        let undocumented: ItemFn = syn::parse_quote! {
            async fn add(args: AddArgs) -> i64 { 0 }
        };
        let error = expand(Options::default(), undocumented).unwrap_err().to_string();
        assert!(error.contains("needs a description"), "{error}");
    }
}

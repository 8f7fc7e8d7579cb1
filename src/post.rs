//! `--post FILE` and `-P CODE`: the rhai post-processing script of a run (a tool's report
//! unless one is given), compiled before anything runs, and the rendering of its diagnostics
//! with its own source.

use crate::cli::Cli;
use sonde_lang::diag::Diagnostic;
use sonde_lang::span::Span;
use sonde_present::report::{CODE_PREFIX, Post, PostOptions};
use std::path::Path;

/// A post-processing script: its name (for diagnostics) and text.
#[derive(Clone, Debug)]
pub struct PostSource {
    /// The file name (`-P` for inline code, `stdlib/NAME.rhai` for a tool's report).
    pub name: String,
    /// The rhai source.
    pub text: String,
}

/// A compiled post-processing script with its source.
pub struct Loaded {
    /// Where it came from.
    pub source: PostSource,
    /// The compiled script.
    pub post: Post,
}

/// The post-processing script `cli` names (`-P CODE`, `--post FILE`), else `default` (a
/// tool's report), compiled with the run's options. `Ok(None)` without one; `Err` after the
/// diagnostic was printed.
pub fn load(cli: &Cli, default: Option<PostSource>) -> Result<Option<Loaded>, ()> {
    let source = if let Some(code) = &cli.post_eval {
        PostSource {
            name: "-P".into(),
            text: code.clone(),
        }
    } else if let Some(path) = &cli.post {
        match sonde_system::user_files::read(
            path,
            sonde_system::user_files::MAX_SCRIPT,
            sonde_system::user_files::Pipes::Refuse,
        ) {
            Ok(bytes) => PostSource {
                name: path.display().to_string(),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            },
            Err(e) => {
                let d = Diagnostic::error(
                    "sonde::post::read",
                    Span::default(),
                    format!(
                        "cannot read post-processing script {}: {e}",
                        Path::new(path).display()
                    ),
                )
                .with_help("--post takes a rhai file; -P takes rhai code");
                crate::diagnostics::render(&[d], "", "");
                return Err(());
            }
        }
    } else if let Some(d) = default {
        d
    } else {
        return Ok(None);
    };
    let opts = PostOptions {
        unsafe_allowed: cli.unsafe_,
    };
    match Post::compile(&source.text, opts) {
        Ok(mut post) => {
            // A failure during the run is shown when it happens, before the output that
            // prints in the script's place.
            let (name, text) = (source.name.clone(), source.text.clone());
            post.set_reporter(Box::new(move |d| {
                crate::diagnostics::render(std::slice::from_ref(d), &name, &text)
            }));
            Ok(Some(Loaded { source, post }))
        }
        Err(d) => {
            crate::diagnostics::render(&[d], &source.name, &source.text);
            Err(())
        }
    }
}

/// Splits a loaded script into its source (to render diagnostics) and the script.
pub fn split(loaded: Option<Loaded>) -> (Option<PostSource>, Option<Post>) {
    match loaded {
        Some(l) => (Some(l.source), Some(l.post)),
        None => (None, None),
    }
}

/// Renders a run's diagnostics: the post-processing script's with its source, the others
/// with the tracing script's (`name`, `src`).
pub fn render_run(diags: &[Diagnostic], name: &str, src: &str, post: Option<&PostSource>) {
    let (mine, theirs): (Vec<Diagnostic>, Vec<Diagnostic>) = diags
        .iter()
        .cloned()
        .partition(|d| d.code.starts_with(CODE_PREFIX));
    crate::diagnostics::render(&theirs, name, src);
    match post {
        Some(p) => crate::diagnostics::render(&mine, &p.name, &p.text),
        None => crate::diagnostics::render(&mine, name, src),
    }
}

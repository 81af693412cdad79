//! The worker's progress bar on a terminal.

use std::sync::Arc;
use std::time::Duration;

/// A progress bar on stderr when it is a terminal: documents sent by this process, out of
/// the snapshot's live documents. [`TerminalProgress::finish`] draws the final count and leaves it.
pub struct TerminalProgress {
    bar: indicatif::ProgressBar,
    totals: Arc<std::sync::OnceLock<engine::Totals>>,
    metrics: Arc<engine::Metrics>,
    ticker: tokio::task::JoinHandle<()>,
}

impl TerminalProgress {
    /// Starts the bar, or returns `None` when disabled or stderr is not a terminal. Its
    /// length is the source's total once the items phase has planned it.
    pub fn start(
        enabled: bool,
        totals: Arc<std::sync::OnceLock<engine::Totals>>,
        metrics: Arc<engine::Metrics>,
    ) -> Option<TerminalProgress> {
        use std::io::IsTerminal;
        if !enabled || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} docs by this worker ({per_sec}) {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let ticker = {
            let (bar, totals, metrics) = (bar.clone(), totals.clone(), metrics.clone());
            tokio::spawn(async move {
                loop {
                    TerminalProgress::update(&bar, &totals, &metrics);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            })
        };
        Some(TerminalProgress {
            bar,
            totals,
            metrics,
            ticker,
        })
    }

    fn update(
        bar: &indicatif::ProgressBar,
        totals: &std::sync::OnceLock<engine::Totals>,
        m: &engine::Metrics,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(t) = totals.get() {
            bar.set_length(t.docs);
        }
        bar.set_position(
            m.docs_sent.load(Relaxed) + m.docs_refused.load(Relaxed) + m.docs_skipped.load(Relaxed),
        );
        bar.set_message(format!(
            "{} refused, {} skipped, {} in flight",
            m.docs_refused.load(Relaxed),
            m.docs_skipped.load(Relaxed),
            m.in_flight_batches.load(Relaxed)
        ));
    }

    /// Stops updating and draws the final position, which stays on the terminal.
    pub fn finish(self) {
        self.ticker.abort();
        TerminalProgress::update(&self.bar, &self.totals, &self.metrics);
        // `abandon` keeps the position drawn; `finish` would jump to the length.
        self.bar.abandon();
    }
}

//! Parallel production, in-order consumption: the shape shared by the in-memory write
//! (encode blocks, append them) and the merge (merge key ranges, feed them to the builder).

use crate::error::{Error, Result};
use rayon::prelude::*;
use std::sync::mpsc;

/// Produces a result for each of `items` on the rayon pool, `window` items at a time, and
/// hands the results, in item order, to `consume` on a thread of its own, so that the
/// next window is produced while the previous one is consumed. At most `2 * window + 1`
/// results are alive at once (a window being produced, a window queued, one consumed).
///
/// Returns `state` after the last result is consumed. A production error comes first
/// (the consumer only stopped early because of it), then a consumer error.
pub(crate) fn produce_in_order<I, T, S>(
    items: &[I],
    window: usize,
    produce: impl Fn(&I) -> Result<T> + Sync,
    mut state: S,
    mut consume: impl FnMut(&mut S, T) -> Result<()> + Send,
) -> Result<S>
where
    I: Sync,
    T: Send,
    S: Send,
{
    let window = window.max(1);
    let (tx, rx) = mpsc::sync_channel::<T>(window);
    std::thread::scope(|scope| {
        let consumer = scope.spawn(move || -> Result<S> {
            for item in rx {
                consume(&mut state, item)?;
            }
            Ok(state)
        });
        let produced = (|| -> Result<()> {
            for win in items.chunks(window) {
                let results: Vec<Result<T>> = win.par_iter().map(&produce).collect();
                for r in results {
                    if tx.send(r?).is_err() {
                        // The consumer stopped on an error; it is reported below.
                        return Ok(());
                    }
                }
            }
            Ok(())
        })();
        drop(tx);
        let consumed = consumer
            .join()
            .unwrap_or(Err(Error::Internal("consumer thread panicked")));
        produced.and(consumed)
    })
}

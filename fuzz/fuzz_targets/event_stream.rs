//! Any bytes as a remote upstream's event stream, cut into chunks anywhere: the events must not
//! depend on where the cuts fall, and no unfinished event may pass the bound. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx::upstream::event_stream::EventStream;

const LIMIT: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&cut_seed, stream)) = data.split_first() else {
        return;
    };
    let whole = EventStream::new(LIMIT).push(stream);
    let mut chunked = EventStream::new(LIMIT);
    let step = usize::from(cut_seed % 7) + 1;
    let mut events = Vec::new();
    let mut refused = None;
    for chunk in stream.chunks(step) {
        match chunked.push(chunk) {
            Ok(more) => events.extend(more),
            Err(too_large) => {
                refused = Some(too_large);
                break;
            }
        }
    }
    match (whole, refused) {
        (Ok(all), None) => assert_eq!(all, events, "the cuts changed the events"),
        (Err(a), Some(b)) => assert_eq!(a, b),
        (whole, chunked) => panic!("one way refused, the other not: {whole:?} / {chunked:?}"),
    }
});

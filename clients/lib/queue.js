// A queue of what an observable (or any callback) delivers, read one item at a time with a
// timeout: subscription tests wait for "the next event" whatever the client library.
import { withTimeout } from './server.js';

/** Queue holds pushed items until next() takes them, in order. */
export class Queue {
  #items = [];
  #waiting = [];

  push(item) {
    const w = this.#waiting.shift();
    if (w) w(item);
    else this.#items.push(item);
  }

  /** next resolves with the oldest item, waiting up to ms for one. */
  next(what, ms = 10_000) {
    if (this.#items.length) return Promise.resolve(this.#items.shift());
    let resolve;
    const p = new Promise((r) => {
      resolve = r;
    });
    this.#waiting.push(resolve);
    return withTimeout(p, ms, what).catch((err) => {
      this.#waiting.splice(this.#waiting.indexOf(resolve), 1);
      throw err;
    });
  }
}

/**
 * observe subscribes to an observable (Apollo's, zen-observable's, wonka's toObservable)
 * and queues { value }, { error } and { done: true }; close() unsubscribes.
 */
export function observe(observable) {
  const queue = new Queue();
  const sub = observable.subscribe({
    next: (value) => queue.push({ value }),
    error: (error) => queue.push({ error }),
    complete: () => queue.push({ done: true }),
  });
  return { next: (what, ms) => queue.next(what, ms), close: () => sub.unsubscribe() };
}

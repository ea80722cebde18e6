// A one-consumer async queue: the request side of a Play call, and the events
// a session hands to its reader.

/** Values pushed by one side and read, in order, by one `for await` on the other. */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  private ended = false;
  private failure: { error: unknown } | undefined;

  /** Adds a value; ignored once the queue is ended. */
  push(item: T): void {
    if (this.ended) {
      return;
    }
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      waiter.resolve({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  /** No more values: the reader gets those left, then the end. */
  end(): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    this.wake();
  }

  /** No more values: the reader gets those left, then `error`. */
  fail(error: unknown): void {
    if (this.ended) {
      return;
    }
    this.ended = true;
    this.failure = { error };
    this.wake();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter === undefined || this.items.length > 0) {
      return;
    }
    this.waiter = undefined;
    if (this.failure !== undefined) {
      waiter.reject(this.failure.error);
    } else {
      waiter.resolve({ value: undefined, done: true });
    }
  }

  next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) {
      return Promise.resolve({ value: this.items.shift() as T, done: false });
    }
    if (this.ended) {
      return this.failure !== undefined
        ? Promise.reject(this.failure.error)
        : Promise.resolve({ value: undefined, done: true });
    }
    if (this.waiter !== undefined) {
      return Promise.reject(new Error("AsyncQueue has one reader"));
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      // Leaving a `for await` early keeps what is queued for the next reader.
      return: (): Promise<IteratorResult<T>> => Promise.resolve({ value: undefined, done: true }),
      // What Connect calls on the request side of a call it ends: no more values.
      throw: (error?: unknown): Promise<IteratorResult<T>> => {
        this.end();
        return Promise.reject(error);
      },
    };
  }
}

package spades.client;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs tasks one at a time, in order, on another executor: the callbacks of one session or
 * stream, so that a listener sees them in order and never two at once.
 */
final class SerialExecutor implements Executor {
  private static final Logger log = Logger.getLogger(SerialExecutor.class.getName());

  private final Executor delegate;
  private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
  private boolean running;

  SerialExecutor(Executor delegate) {
    this.delegate = delegate;
  }

  @Override
  public void execute(Runnable task) {
    synchronized (tasks) {
      tasks.add(task);
      if (running) {
        return;
      }
      running = true;
    }
    try {
      delegate.execute(this::drain);
    } catch (RejectedExecutionException e) {
      drain(); // the client is closing: run here
    }
  }

  private void drain() {
    while (true) {
      Runnable next;
      synchronized (tasks) {
        next = tasks.poll();
        if (next == null) {
          running = false;
          return;
        }
      }
      try {
        next.run();
      } catch (RuntimeException e) {
        log.log(Level.WARNING, "a listener callback threw", e);
      }
    }
  }
}

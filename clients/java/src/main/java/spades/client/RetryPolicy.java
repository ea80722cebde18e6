package spades.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with jitter and a limit on attempts, for reconnecting a {@link SeatSession}
 * and retrying the calls that are safe to repeat.
 *
 * <p>The delay before retry {@code n} (from 1) is {@code min(max, initial * multiplier^(n-1))},
 * scaled by a random factor in {@code [1 - jitter, 1 + jitter]}. After {@code maxAttempts}
 * consecutive failures the caller gives up; a session counts again from 1 once a reconnected call
 * has answered.
 */
public final class RetryPolicy {
  /** 200 ms, doubling up to 5 s, 20% jitter, 8 attempts. */
  public static final RetryPolicy DEFAULT =
      new RetryPolicy(Duration.ofMillis(200), Duration.ofSeconds(5), 2.0, 0.2, 8);

  /** No retry at all. */
  public static final RetryPolicy NONE = new RetryPolicy(Duration.ZERO, Duration.ZERO, 1.0, 0, 0);

  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final double multiplier;
  private final double jitter;
  private final int maxAttempts;

  /**
   * A policy.
   *
   * @param initialBackoff the delay before the first retry
   * @param maxBackoff the longest delay
   * @param multiplier how much each delay grows (at least 1)
   * @param jitter the random part of each delay, from 0 to 1
   * @param maxAttempts retries allowed in a row (0: none)
   */
  public RetryPolicy(
      Duration initialBackoff,
      Duration maxBackoff,
      double multiplier,
      double jitter,
      int maxAttempts) {
    if (initialBackoff.isNegative() || maxBackoff.compareTo(initialBackoff) < 0) {
      throw new IllegalArgumentException("need 0 <= initialBackoff <= maxBackoff");
    }
    if (multiplier < 1.0 || jitter < 0 || jitter > 1 || maxAttempts < 0) {
      throw new IllegalArgumentException("need multiplier >= 1, 0 <= jitter <= 1, maxAttempts >= 0");
    }
    this.initialBackoff = initialBackoff;
    this.maxBackoff = maxBackoff;
    this.multiplier = multiplier;
    this.jitter = jitter;
    this.maxAttempts = maxAttempts;
  }

  /**
   * How many retries in a row are allowed.
   *
   * @return the limit
   */
  public int getMaxAttempts() {
    return maxAttempts;
  }

  /**
   * The delay before retry {@code attempt}, jitter included.
   *
   * @param attempt the retry's number, from 1
   * @return the delay
   */
  public Duration delay(int attempt) {
    double base = initialBackoff.toNanos() * Math.pow(multiplier, Math.max(0, attempt - 1));
    double capped = Math.min(base, (double) maxBackoff.toNanos());
    double factor = 1.0 + jitter * (2 * ThreadLocalRandom.current().nextDouble() - 1);
    return Duration.ofNanos((long) (capped * factor));
  }
}

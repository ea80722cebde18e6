package spades.client;

import io.grpc.Metadata;

/**
 * The {@code authorization: Bearer <secret>} header every credential travels in: the operator
 * token, a seat or spectator token, or a player credential (a JWT).
 */
final class Credentials {
  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private Credentials() {}

  static Metadata bearer(String secret) {
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + secret);
    return headers;
  }

  /** {@link #bearer}, or no header at all for a null or empty secret (the server says which). */
  static Metadata bearerOrNone(String secret) {
    return secret == null || secret.isEmpty() ? new Metadata() : bearer(secret);
  }
}

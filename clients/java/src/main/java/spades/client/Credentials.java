package spades.client;

import io.grpc.Metadata;

/** The {@code authorization: Bearer <secret>} header every credential travels in. */
final class Credentials {
  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private Credentials() {}

  static Metadata bearer(String secret) {
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + secret);
    return headers;
  }
}

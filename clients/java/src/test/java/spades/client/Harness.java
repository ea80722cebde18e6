package spades.client;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A real server for the tests: {@code $SPADES_PYTHON clients/conformance/serve.py}, its JSON line
 * read from standard output; closing its standard input stops it.
 */
final class Harness implements AutoCloseable {
  private static final long START_TIMEOUT_S = 60;
  private static final long STOP_TIMEOUT_S = 20;

  final String address;
  final String server;
  final String control;
  final String operatorToken;
  // With start("--tls"): the operator port (mutual TLS), and the PEM files of the run's CA and of
  // the operator's client certificate; null otherwise.
  final String operator;
  final Path ca;
  final Path clientCert;
  final Path clientKey;
  private final Process process;

  private Harness(Process process, JsonObject ready) {
    this.process = process;
    this.address = ready.get("address").getAsString();
    this.server = ready.get("server").getAsString();
    this.control = ready.get("control").getAsString();
    this.operatorToken = ready.get("operatorToken").getAsString();
    JsonObject tls = ready.has("tls") ? ready.getAsJsonObject("tls") : null;
    this.operator = tls != null ? ready.get("operator").getAsString() : null;
    this.ca = tls != null ? Paths.get(tls.get("ca").getAsString()) : null;
    this.clientCert = tls != null ? Paths.get(tls.get("clientCert").getAsString()) : null;
    this.clientKey = tls != null ? Paths.get(tls.get("clientKey").getAsString()) : null;
  }

  /** The repository's root (set by the pom; the module's ../.. otherwise). */
  static Path repoRoot() {
    String root = System.getProperty("spades.repoRoot");
    return (root != null ? Paths.get(root) : Paths.get("..", "..")).toAbsolutePath().normalize();
  }

  /** $SPADES_PYTHON, or the repository's .venv/bin/python. */
  static String python() {
    String python = System.getenv("SPADES_PYTHON");
    if (python != null && !python.isEmpty()) {
      return python;
    }
    Path venv = repoRoot().resolve(".venv/bin/python");
    if (Files.isExecutable(venv)) {
      return venv.toString();
    }
    throw new IllegalStateException(
        "set SPADES_PYTHON to the Python that has spades_server (make install makes .venv)");
  }

  /** serve.py with {@code args} ({@code "--tls"}: TLS only, operator calls on mutual TLS). */
  static Harness start(String... args) throws Exception {
    Path root = repoRoot();
    Path log = Paths.get("target", "serve-" + ProcessHandle.current().pid() + ".log");
    Files.createDirectories(log.getParent());
    List<String> argv = new ArrayList<>();
    argv.add(python());
    argv.add(root.resolve("clients/conformance/serve.py").toString());
    argv.addAll(List.of(args));
    ProcessBuilder pb =
        new ProcessBuilder(argv)
            .directory(root.toFile())
            .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
    Process p = pb.start();
    CompletableFuture<String> line =
        CompletableFuture.supplyAsync(() -> firstLine(p.getInputStream()));
    try {
      String ready = line.get(START_TIMEOUT_S, TimeUnit.SECONDS);
      if (ready == null) {
        throw new IllegalStateException("serve.py exited before it was ready; see " + log);
      }
      Harness h = new Harness(p, JsonParser.parseString(ready).getAsJsonObject());
      // Keep reading (and dropping) what it prints, so that it never blocks on a full pipe.
      Thread drain = new Thread(() -> drain(p.getInputStream()), "serve.py-stdout");
      drain.setDaemon(true);
      drain.start();
      return h;
    } catch (Exception e) {
      p.destroyForcibly();
      throw e;
    }
  }

  private static String firstLine(InputStream in) {
    try {
      return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)).readLine();
    } catch (IOException e) {
      return null;
    }
  }

  private static void drain(InputStream in) {
    byte[] buf = new byte[4096];
    try {
      while (in.read(buf) >= 0) {
        // dropped
      }
    } catch (IOException e) {
      // the process ended
    }
  }

  /** POST {control}/cut: resets every proxied connection at once. */
  void cut() throws IOException {
    HttpURLConnection c = (HttpURLConnection) new URL(control + "/cut").openConnection();
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    c.setConnectTimeout(5000);
    c.setReadTimeout(5000);
    c.getOutputStream().close();
    int code = c.getResponseCode();
    try (InputStream in = c.getInputStream()) {
      in.readAllBytes();
    }
    if (code != 200) {
      throw new IOException("POST /cut answered " + code);
    }
  }

  /**
   * POST {control}/credential: a player credential (a JWT, valid 10 minutes) that the server
   * trusts, for {@code playerId} shown as {@code name}.
   */
  String credential(String playerId, String name) throws IOException {
    JsonObject body = new JsonObject();
    body.addProperty("playerId", playerId);
    body.addProperty("name", name);
    return postJson("/credential", body).get("credential").getAsString();
  }

  /** POST {control}/friend: serve.py drives a second player (the conformance README). */
  JsonObject friend(JsonObject request) throws IOException {
    return postJson("/friend", request);
  }

  /** POST {control}{path} with a JSON body; its JSON answer, or an IOException with its error. */
  JsonObject postJson(String path, JsonObject body) throws IOException {
    HttpURLConnection c = (HttpURLConnection) new URL(control + path).openConnection();
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    c.setConnectTimeout(5000);
    c.setReadTimeout(30000);
    c.setRequestProperty("Content-Type", "application/json");
    try (OutputStream out = c.getOutputStream()) {
      out.write(body.toString().getBytes(StandardCharsets.UTF_8));
    }
    int code = c.getResponseCode();
    String text;
    try (InputStream in = code == 200 ? c.getInputStream() : c.getErrorStream()) {
      text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    if (code != 200) {
      throw new IOException("POST " + path + " answered " + code + ": " + text);
    }
    return JsonParser.parseString(text).getAsJsonObject();
  }

  @Override
  public void close() throws IOException {
    try {
      process.getOutputStream().close();
    } catch (IOException e) {
      // already gone
    }
    try {
      if (!process.waitFor(STOP_TIMEOUT_S, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(STOP_TIMEOUT_S, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}

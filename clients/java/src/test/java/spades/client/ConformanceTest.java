package spades.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every clients/conformance/scenarios/*.json, over both transports against one real server: the
 * two transcripts must be equal, and equal to clients/conformance/expected/NAME.jsonl byte for
 * byte (skipped, said so, while that directory does not exist at all). The okhttp one is written to build/conformance/java/NAME.jsonl, the
 * netty one to clients/java/target/conformance/netty/NAME.jsonl.
 */
class ConformanceTest {
  private static Harness harness;
  /** Each scenario's transcript over the first transport, for the second to equal. */
  private static final Map<String, String> TRANSCRIPTS = new ConcurrentHashMap<>();

  @BeforeAll
  static void startServer() throws Exception {
    harness = Harness.start();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (harness != null) {
      harness.close();
    }
  }

  /** The expected transcripts: clients/conformance/expected/, or $SPADES_CONFORMANCE_EXPECTED. */
  static Path expectedDir() {
    String dir = System.getenv("SPADES_CONFORMANCE_EXPECTED");
    return dir != null && !dir.isEmpty()
        ? Path.of(dir)
        : Harness.repoRoot().resolve("clients/conformance/expected");
  }

  static List<Path> scenarios() throws Exception {
    List<Path> out = new ArrayList<>();
    try (Stream<Path> s = Files.list(Harness.repoRoot().resolve("clients/conformance/scenarios"))) {
      s.filter(p -> p.toString().endsWith(".json")).sorted().forEach(out::add);
    }
    return out;
  }

  @TestFactory
  Stream<DynamicTest> scenariosOverBothTransports() throws Exception {
    List<Path> scenarios = scenarios();
    assertTrue(!scenarios.isEmpty(), "no scenario in clients/conformance/scenarios");
    List<DynamicTest> tests = new ArrayList<>();
    for (Path file : scenarios) {
      JsonObject scenario =
          JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8)).getAsJsonObject();
      String name = scenario.get("name").getAsString();
      for (Transport transport : new Transport[] {Transport.OKHTTP, Transport.NETTY}) {
        tests.add(
            DynamicTest.dynamicTest(
                name + " over " + transport, () -> runScenario(name, scenario, transport)));
      }
    }
    return tests.stream();
  }

  private static void runScenario(String name, JsonObject scenario, Transport transport)
      throws Exception {
    String transcript;
    try (SpadesClient client =
        SpadesClient.builder(harness.address)
            .plaintext()
            .transport(transport)
            .operatorToken(harness.operatorToken)
            .build()) {
      StringBuilder b = new StringBuilder();
      for (String line : new ConformanceRunner(client, harness, scenario).run()) {
        b.append(line).append('\n');
      }
      transcript = b.toString();
    }
    Path out =
        transport == Transport.OKHTTP
            ? Harness.repoRoot().resolve("build/conformance/java").resolve(name + ".jsonl")
            : Path.of("target", "conformance", "netty", name + ".jsonl");
    Files.createDirectories(out.getParent());
    Files.writeString(out, transcript, StandardCharsets.UTF_8);

    String other = TRANSCRIPTS.putIfAbsent(name, transcript);
    if (other != null) {
      assertEquals(other, transcript, name + ": the transports' transcripts differ");
    }
    Path dir = expectedDir();
    assumeTrue(
        Files.isDirectory(dir),
        "no " + dir + " (before clients-python is merged): " + out + " not compared");
    Path expected = dir.resolve(name + ".jsonl");
    assertTrue(
        Files.exists(expected),
        "no expected transcript " + expected + " (written: " + out + ")");
    String want = Files.readString(expected, StandardCharsets.UTF_8);
    assertEquals(want, transcript, name + " over " + transport + " differs from " + expected);
  }
}

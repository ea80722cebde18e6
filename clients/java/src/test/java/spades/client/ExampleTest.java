package spades.client;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The README's examples are this module's example/PlayAHand.java and example/QuickPlay.java, as
 * they are, and each plays a hand against a real server.
 */
class ExampleTest {
  private static final Path MODULE = Harness.repoRoot().resolve("clients/java");

  @Test
  void readmeShowsTheExamplesAsTheyAre() throws Exception {
    String readme = Files.readString(MODULE.resolve("README.md"), StandardCharsets.UTF_8);
    for (String example : new String[] {"PlayAHand", "QuickPlay"}) {
      String file = "src/test/java/example/" + example + ".java";
      String source = Files.readString(MODULE.resolve(file), StandardCharsets.UTF_8);
      assertTrue(
          readme.contains("```java\n" + source + "```\n"),
          "README.md's example is not " + file + " as it is");
    }
  }

  @Test
  void theExamplePlaysAHand() throws Exception {
    try (Harness harness = Harness.start()) {
      PrintStream out = System.out;
      ByteArrayOutputStream printed = new ByteArrayOutputStream();
      System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
      try {
        example.PlayAHand.main(new String[] {harness.address, harness.operatorToken});
      } finally {
        System.setOut(out);
      }
      String text = printed.toString(StandardCharsets.UTF_8);
      out.print(text);
      assertTrue(text.contains("wins trick 13"), text);
      assertTrue(text.contains("hand scored: side 0"), text);
    }
  }

  @Test
  void theQuickPlayExamplePlaysAHand() throws Exception {
    try (Harness harness = Harness.start()) {
      String credential = harness.credential("example-" + System.nanoTime(), "Ada");
      PrintStream out = System.out;
      ByteArrayOutputStream printed = new ByteArrayOutputStream();
      System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
      try {
        example.QuickPlay.main(new String[] {harness.address, credential});
      } finally {
        System.setOut(out);
      }
      String text = printed.toString(StandardCharsets.UTF_8);
      out.print(text);
      assertTrue(text.contains(": looking for a table"), text);
      assertTrue(text.matches("(?s).*seat \\d of match \\w+: .*Ada.*"), text);
      assertTrue(text.contains("hand scored: "), text);
    }
  }
}

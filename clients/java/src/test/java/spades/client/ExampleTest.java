package spades.client;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The README's example is this module's example/PlayAHand.java, and it plays a hand. */
class ExampleTest {
  private static final Path MODULE = Harness.repoRoot().resolve("clients/java");

  @Test
  void readmeShowsTheExampleAsItIs() throws Exception {
    String source =
        Files.readString(
            MODULE.resolve("src/test/java/example/PlayAHand.java"), StandardCharsets.UTF_8);
    String readme = Files.readString(MODULE.resolve("README.md"), StandardCharsets.UTF_8);
    assertTrue(
        readme.contains("```java\n" + source + "```\n"),
        "README.md's example is not src/test/java/example/PlayAHand.java as it is");
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
}

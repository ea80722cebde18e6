package spades.client;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The conformance spec's canonical JSON: objects with their keys sorted by code point at every
 * level, no whitespace, strings as UTF-8 with only {@code "}, {@code \} and the control characters
 * escaped (as Python's {@code json.dumps(ensure_ascii=False)} writes them: {@code \n}, {@code \r},
 * {@code \t}, {@code \b}, {@code \f}, any other one as a six-character u-escape, 00xx in lower
 * case).
 *
 * <p>Values: {@link Map} with String keys, {@link List}, String, Integer, Long (as a number),
 * Boolean.
 */
final class Json {
  private Json() {}

  /** Code point order (String.compareTo is UTF-16 order, which differs above U+FFFF). */
  static final Comparator<String> CODE_POINT_ORDER =
      (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
          int ca = a.codePointAt(i);
          int cb = b.codePointAt(j);
          if (ca != cb) {
            return Integer.compare(ca, cb);
          }
          i += Character.charCount(ca);
          j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
      };

  /** A new object whose keys will be written sorted. */
  static Map<String, Object> object() {
    return new TreeMap<>(CODE_POINT_ORDER);
  }

  static Map<String, Object> object(String k1, Object v1) {
    Map<String, Object> o = object();
    o.put(k1, v1);
    return o;
  }

  static List<Object> array() {
    return new ArrayList<>();
  }

  static String write(Object value) {
    StringBuilder b = new StringBuilder();
    write(b, value);
    return b.toString();
  }

  private static void write(StringBuilder b, Object value) {
    if (value instanceof Map) {
      Map<String, Object> sorted = object();
      for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
        sorted.put((String) e.getKey(), e.getValue());
      }
      b.append('{');
      boolean first = true;
      for (Map.Entry<String, Object> e : sorted.entrySet()) {
        if (!first) {
          b.append(',');
        }
        first = false;
        string(b, e.getKey());
        b.append(':');
        write(b, e.getValue());
      }
      b.append('}');
    } else if (value instanceof List) {
      b.append('[');
      boolean first = true;
      for (Object v : (List<?>) value) {
        if (!first) {
          b.append(',');
        }
        first = false;
        write(b, v);
      }
      b.append(']');
    } else if (value instanceof String) {
      string(b, (String) value);
    } else if (value instanceof Integer || value instanceof Long || value instanceof Boolean) {
      b.append(value);
    } else {
      throw new IllegalArgumentException("not a JSON value: " + value);
    }
  }

  private static void string(StringBuilder b, String s) {
    b.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          b.append("\\\"");
          break;
        case '\\':
          b.append("\\\\");
          break;
        case '\n':
          b.append("\\n");
          break;
        case '\r':
          b.append("\\r");
          break;
        case '\t':
          b.append("\\t");
          break;
        case '\b':
          b.append("\\b");
          break;
        case '\f':
          b.append("\\f");
          break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    b.append('"');
  }
}

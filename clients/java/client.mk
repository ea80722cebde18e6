# The Java client (clients/java/): a Maven module on grpc-java 1.76.0, protobuf-javalite,
# okhttp and netty-shaded. Maven resolves into ~/.m2 on the first run and works from there
# afterwards. Its tests start a real server with clients/conformance/serve.py, hence `install`.
JAVA_CLIENT_DIR := clients/java
MVN ?= mvn

CLIENT_TESTS += test-client-java
CLIENT_LINTS += lint-client-java

.PHONY: test-client-java lint-client-java

# Maven's and the examples' output goes to build/test-reports/java.log, shown
# when something failed; the closing line below says what ran.
test-client-java: install
	@mkdir -p build/test-reports
	@cd $(JAVA_CLIENT_DIR) && SPADES_PYTHON="$${SPADES_PYTHON:-$(abspath $(PYTHON))}" $(MVN) -q -B -Dstyle.color=never -Dsurefire.redirectTestOutputToFile=true test \
	  > $(abspath build/test-reports/java.log) 2>&1 || { cat $(abspath build/test-reports/java.log); exit 1; }
	@$(PYTHON) -c 'import glob, xml.etree.ElementTree as E; \
	s = [E.parse(f).getroot() for f in glob.glob("$(JAVA_CLIENT_DIR)/target/surefire-reports/TEST-*.xml")]; \
	n = lambda k: sum(int(x.get(k, 0)) for x in s); \
	t = sum(float(x.get("time", 0)) for x in s); \
	print("java: %d passed, %d failed, %d skipped in %.0f s" % (n("tests") - n("failures") - n("errors") - n("skipped"), n("failures") + n("errors"), n("skipped"), t))'

# javac -Xlint:all -Werror over the library, its generated stubs and the tests.
lint-client-java:
	cd $(JAVA_CLIENT_DIR) && $(MVN) -q -B -Plint test-compile

// The grpc-java client of the interop suite (interop/run.sh). It reads a
// probe request (JSON) on stdin, probes each target through grpc-java's own
// dns resolver, and prints what the published service config did, in the
// same protocol as interop/goclient (interop/README.md).
//
// It is built against Debian's libgrpc-java (1.41) and run by the runner,
// which sets what grpc-java needs to read TXT records from our publisher:
//
//   - the system property
//     io.grpc.internal.DnsNameResolverProvider.enable_service_config=true
//     (grpc-java reads no TXT record without it);
//   - a mount namespace whose /etc/resolv.conf names the suite's DNS server
//     as "nameserver 127.0.0.1:PORT": grpc-java ignores the authority of
//     dns://NS/HOST and asks the system's nameservers through JNDI;
//   - jdk.net.hosts.file, a hosts file with the cases' addresses, since the
//     JDK resolves addresses through the C library, which cannot be pointed
//     at a port other than 53.
//
// So each target becomes dns:///HOST:PORT. No generated code is needed: the
// test service's messages are written by hand (a few varints and one
// string) and sent with a byte-array marshaller.
import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

public final class ProbeClient {
  private static final String SERVICE = "grpcconfigdns.test.v1.Echo";

  /**
   * grpc-java logs every failed resolution with a stack trace; the failure
   * reaches the report anyway, as the first call's status (detail). Held
   * here so that the level set on it is not lost with the logger.
   */
  private static final Logger GRPC_LOG = Logger.getLogger("io.grpc");
  private static final Metadata.Key<String> BACKEND =
      Metadata.Key.of("backend", Metadata.ASCII_STRING_MARSHALLER);

  /** Sends and receives messages as the bytes they are on the wire. */
  private static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<byte[]>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new RuntimeException(e);
          }
        }
      };

  private static MethodDescriptor<byte[], byte[]> method(String name) {
    return MethodDescriptor.<byte[], byte[]>newBuilder()
        .setType(MethodDescriptor.MethodType.UNARY)
        .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
        .setRequestMarshaller(BYTES)
        .setResponseMarshaller(BYTES)
        .build();
  }

  private static final MethodDescriptor<byte[], byte[]> ECHO = method("Echo");
  private static final MethodDescriptor<byte[], byte[]> SLOW = method("Slow");
  private static final MethodDescriptor<byte[], byte[]> FLAKY = method("Flaky");

  private static void varint(ByteArrayOutputStream out, long n) {
    while ((n & ~0x7FL) != 0) {
      out.write((int) ((n & 0x7F) | 0x80));
      n >>>= 7;
    }
    out.write((int) n);
  }

  /** EchoRequest: sleep_ms = 3, fail_first = 4, key = 5 (echo.proto). */
  private static byte[] echoRequest(int sleepMs, int failFirst, String key) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (sleepMs != 0) {
      out.write(0x18);
      varint(out, sleepMs);
    }
    if (failFirst != 0) {
      out.write(0x20);
      varint(out, failFirst);
    }
    if (!key.isEmpty()) {
      byte[] raw = key.getBytes(StandardCharsets.UTF_8);
      out.write(0x2a);
      varint(out, raw.length);
      out.write(raw, 0, raw.length);
    }
    return out.toByteArray();
  }

  /** What one call did: its status and the backend header values. */
  private static final class Outcome {
    final Status status;
    final List<String> backends;

    Outcome(Status status, List<String> backends) {
      this.status = status;
      this.backends = backends;
    }

    String code() {
      return status.getCode().name();
    }

    String detail() {
      String d = status.getDescription() == null ? "" : status.getDescription();
      for (Throwable c = status.getCause(); c != null; c = c.getCause()) {
        d += ": " + c;
      }
      return d;
    }
  }

  /** One unary call with a 10 s deadline, as every client of the suite makes it. */
  private static Outcome call(ManagedChannel ch, MethodDescriptor<byte[], byte[]> m, byte[] req) {
    ClientCall<byte[], byte[]> c =
        ch.newCall(m, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS));
    CompletableFuture<Outcome> done = new CompletableFuture<>();
    List<String> backends = new ArrayList<>();
    c.start(
        new ClientCall.Listener<byte[]>() {
          @Override
          public void onHeaders(Metadata headers) {
            Iterable<String> vs = headers.getAll(BACKEND);
            if (vs != null) {
              synchronized (backends) {
                vs.forEach(backends::add);
              }
            }
          }

          @Override
          public void onClose(Status status, Metadata trailers) {
            synchronized (backends) {
              done.complete(new Outcome(status, new ArrayList<>(backends)));
            }
          }
        },
        new Metadata());
    c.request(1);
    c.sendMessage(req);
    c.halfClose();
    try {
      return done.get();
    } catch (Exception e) {
      return new Outcome(Status.fromThrowable(e), List.of());
    }
  }

  /**
   * Connects a channel before any call is timed: a cold JVM can take more
   * than half a second to make its first connection, longer than the
   * shortest timeout the suite publishes. It returns when the channel is
   * READY, has failed (TRANSIENT_FAILURE: a rejected record fails it), or
   * after 10 s.
   */
  private static void connect(ManagedChannel ch) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      ConnectivityState s = ch.getState(true);
      if (s == ConnectivityState.READY || s == ConnectivityState.TRANSIENT_FAILURE) {
        return;
      }
      CountDownLatch changed = new CountDownLatch(1);
      ch.notifyWhenStateChanged(s, changed::countDown);
      changed.await(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
    }
  }

  private static ManagedChannel dial(JsonObject req, JsonObject t) {
    String target = "dns:///" + t.get("host").getAsString() + ":" + req.get("port").getAsInt();
    return ManagedChannelBuilder.forTarget(target).usePlaintext().build();
  }

  private static Map<String, Object> probe(JsonObject req, JsonObject t) throws Exception {
    Map<String, Object> r = new LinkedHashMap<>();
    String name = t.get("case").getAsString();
    r.put("case", name);
    List<String> backends = new ArrayList<>();
    String[] detail = {null};
    java.util.function.Function<Outcome, Outcome> note =
        o -> {
          if (!o.status.isOk() && detail[0] == null) {
            detail[0] = o.detail();
          }
          return o;
        };
    ManagedChannel ch = dial(req, t);
    try {
      connect(ch);
      r.put("fast", note.apply(call(ch, ECHO, new byte[0])).code());
      for (int i = 0; i < 30; i++) {
        for (String b : note.apply(call(ch, ECHO, new byte[0])).backends) {
          if (!backends.contains(b)) {
            backends.add(b);
          }
        }
        Thread.sleep(15);
      }
      long start = System.nanoTime();
      r.put("slow", note.apply(call(ch, SLOW, echoRequest(5000, 0, ""))).code());
      r.put("slowMs", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
      String key = "grpc-java/" + name + "/" + req.get("key").getAsString();
      r.put("flaky", note.apply(call(ch, FLAKY, echoRequest(0, 2, key))).code());
    } finally {
      ch.shutdownNow();
    }
    r.put("backends", backends);
    if (detail[0] != null) {
      r.put("detail", detail[0]);
    }
    return r;
  }

  private static final Gson GSON = new Gson();

  private static void emit(Object o) {
    System.out.println(GSON.toJson(o));
    System.out.flush();
  }

  /**
   * Calls Flaky (failing once per key) until a published retry policy makes
   * it succeed.
   */
  private static void watch(JsonObject req, JsonObject t) throws Exception {
    ManagedChannel ch = dial(req, t);
    try {
      connect(ch);
      int[] n = {0};
      java.util.function.Supplier<Outcome> flaky =
          () -> {
            n[0]++;
            String key = "grpc-java/watch/" + req.get("key").getAsString() + "/" + n[0];
            return call(ch, FLAKY, echoRequest(0, 1, key));
          };
      Outcome first = flaky.get();
      if (first.status.getCode() != Status.Code.UNAVAILABLE) {
        emit(
            Map.of(
                "event", "error",
                "detail", "first call: " + first.code() + " " + first.detail() + ", want UNAVAILABLE"));
        return;
      }
      emit(Map.of("event", "ready"));
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(req.get("watchMs").getAsLong());
      while (System.nanoTime() < deadline) {
        if (flaky.get().status.isOk()) {
          emit(Map.of("event", "applied"));
          return;
        }
        Thread.sleep(50);
      }
      emit(Map.of("event", "timeout"));
    } finally {
      ch.shutdownNow();
    }
  }

  /**
   * Warms the JVM up (class loading, the first connection, the JIT) on a
   * channel to the backend's address, which asks no DNS server, so that
   * the probes' channels are timed on a warm JVM.
   */
  private static void warmUp(int port) {
    ManagedChannel ch =
        NettyChannelBuilder.forAddress(new InetSocketAddress("127.0.0.1", port)).usePlaintext().build();
    try {
      for (int i = 0; i < 20; i++) {
        call(ch, ECHO, new byte[0]);
      }
    } finally {
      ch.shutdownNow();
    }
  }

  /**
   * The host name grpc-java matches clientHostname with, read as its
   * DnsNameResolver reads it (InetAddress.getLocalHost().getHostName(),
   * answered from the runner's hosts file), or "" when it cannot be read.
   */
  private static String localHostname() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "";
    }
  }

  public static void main(String[] args) throws Exception {
    GRPC_LOG.setLevel(Level.SEVERE);
    JsonObject req =
        GSON.fromJson(new InputStreamReader(System.in, StandardCharsets.UTF_8), JsonObject.class);
    String mode = req.get("mode").getAsString();
    JsonArray targets = req.getAsJsonArray("targets");
    warmUp(req.get("port").getAsInt());
    if (mode.equals("probe")) {
      ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, targets.size()));
      List<Future<Map<String, Object>>> futures = new ArrayList<>();
      for (JsonElement t : targets) {
        futures.add(pool.submit(() -> probe(req, t.getAsJsonObject())));
      }
      List<Map<String, Object>> results = new ArrayList<>();
      for (Future<Map<String, Object>> f : futures) {
        results.add(f.get());
      }
      pool.shutdown();
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("client", "grpc-java");
      out.put("version", ManagedChannel.class.getPackage().getImplementationVersion());
      out.put("hostname", localHostname());
      out.put("results", results);
      emit(out);
    } else if (mode.equals("watch")) {
      watch(req, targets.get(0).getAsJsonObject());
    } else {
      System.err.println("java client: mode " + mode + ": want probe or watch");
      System.exit(2);
    }
    System.exit(0);
  }
}

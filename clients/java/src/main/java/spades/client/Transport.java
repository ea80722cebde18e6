package spades.client;

import io.grpc.ChannelCredentials;
import io.grpc.ManagedChannelBuilder;

/**
 * The HTTP/2 transport of a channel the client makes itself. Each needs its artifact on the
 * classpath: {@code io.grpc:grpc-okhttp} (Android, or the JVM) or {@code
 * io.grpc:grpc-netty-shaded} (the JVM). The class of the other one is never loaded.
 */
public enum Transport {
  /** grpc-okhttp: the transport for Android, also fine on the JVM. */
  OKHTTP {
    @Override
    ManagedChannelBuilder<?> builder(String target, ChannelCredentials credentials) {
      return OkHttpChannels.builder(target, credentials);
    }
  },
  /** grpc-netty-shaded: the usual transport on a JVM server or desktop. */
  NETTY {
    @Override
    ManagedChannelBuilder<?> builder(String target, ChannelCredentials credentials) {
      return NettyChannels.builder(target, credentials);
    }
  };

  abstract ManagedChannelBuilder<?> builder(String target, ChannelCredentials credentials);
}

/** Touches grpc-okhttp only when {@link Transport#OKHTTP} is used. */
final class OkHttpChannels {
  private OkHttpChannels() {}

  static ManagedChannelBuilder<?> builder(String target, ChannelCredentials credentials) {
    return io.grpc.okhttp.OkHttpChannelBuilder.forTarget(target, credentials);
  }
}

/** Touches grpc-netty-shaded only when {@link Transport#NETTY} is used. */
final class NettyChannels {
  private NettyChannels() {}

  static ManagedChannelBuilder<?> builder(String target, ChannelCredentials credentials) {
    return io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forTarget(target, credentials);
  }
}

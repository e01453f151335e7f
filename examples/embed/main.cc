// A C++ host application that embeds moonflow: it runs a Lua model script, feeds a batch of
// images from its own memory without copying, and prints the predictions.
// usage: embed_host model.lua [weights.safetensors]
//   (weights: moonflow examples/mlp_fashion.lua --save mlp.safetensors)
#include <moonflow/moonflow.hpp>

#include <cstdio>
#include <vector>

static const char* const kLabels[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                      "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

int main(int argc, char** argv) {
  const char* script = argc > 1 ? argv[1] : "model.lua";
  try {
    mf::Engine engine;  // one Lua state with moonflow loaded
    // a C++ function Lua can call; exceptions thrown in it become Lua errors
    engine.register_function("host_log", [](const std::vector<mf::Value>& args) -> mf::Values {
      std::printf("[model] %s\n", args.at(0).string().c_str());
      return {};
    });
    if (argc > 2) engine.set("MODEL_WEIGHTS", argv[2]);
    engine.run_file(script);  // defines predict(x)

    // four 28x28 images in the host's own memory: a bar, a block, a low band and a ring
    const int64_t batch = 4, side = 28;
    std::vector<float> images(batch * side * side, 0.0f);
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t r = 0; r < side; ++r)
        for (int64_t c = 0; c < side; ++c) {
          int64_t dr = r - 14, dc = c - 14;
          bool on = i == 0 ? (c >= 10 && c < 18)
                  : i == 1 ? (r >= 4 && r < 26 && c >= 4 && c < 24)
                  : i == 2 ? (r >= 16 && r < 24)
                           : (dr * dr + dc * dc >= 49 && dr * dr + dc * dc < 121);
          images[size_t((i * side + r) * side + c)] = on ? 0.8f : 0.0f;
        }
    mf::Tensor x = mf::Tensor::view(images.data(), {batch, side * side});  // zero-copy

    std::vector<mf::Tensor> out = engine.call("predict", {x});  // probabilities, classes
    std::vector<float> probs = out[0].to_vector<float>();
    std::vector<int64_t> classes = out[1].to_vector<int64_t>();  // 1-based, as Lua counts
    for (int64_t i = 0; i < batch; ++i) {
      int64_t k = classes[size_t(i)];
      std::printf("image %d: class %d %-12s p = %.3f\n", int(i + 1), int(k), kLabels[k - 1],
                  probs[size_t(i * 10 + k - 1)]);
    }
  } catch (const mf::Error& e) {  // Lua errors arrive with their traceback
    std::fprintf(stderr, "embed_host: %s\n", e.what());
    return 1;
  }
  return 0;
}

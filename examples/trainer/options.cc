#include "options.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>

namespace trainer {

namespace {

int64_t to_int(const std::string& option, const std::string& text, int64_t minimum) {
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < minimum) {
    throw std::invalid_argument(option + ": expected an integer >= " + std::to_string(minimum) +
                                ", got '" + text + "'");
  }
  return value;
}

double to_positive(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value > 0.0)) {
    throw std::invalid_argument(option + ": expected a number > 0, got '" + text + "'");
  }
  return value;
}

std::string one_of(const std::string& option, const std::string& text,
                   std::initializer_list<const char*> allowed) {
  for (const char* choice : allowed) {
    if (text == choice) return text;
  }
  std::string list;
  for (const char* choice : allowed) list += (list.empty() ? "" : " or ") + std::string(choice);
  throw std::invalid_argument(option + ": expected " + list + ", got '" + text + "'");
}

using Setter = std::function<void(Options&, const std::string&)>;

const std::map<std::string, Setter>& valued_options() {
  static const std::map<std::string, Setter> setters = {
      {"--data",
       [](Options& o, const std::string& v) {
         if (v != "synthetic" && v != "digits" && v.rfind("idx:", 0) != 0) {
           throw std::invalid_argument("--data: expected synthetic, digits or idx:DIR, got '" + v +
                                       "'");
         }
         o.data = v;
       }},
      {"--model",
       [](Options& o, const std::string& v) {
         o.model = one_of("--model", v, {"mlp", "cnn"});
       }},
      {"--epochs", [](Options& o, const std::string& v) { o.epochs = to_int("--epochs", v, 1); }},
      {"--batch-size",
       [](Options& o, const std::string& v) { o.batch_size = to_int("--batch-size", v, 1); }},
      {"--lr", [](Options& o, const std::string& v) { o.lr = to_positive("--lr", v); }},
      {"--optimizer",
       [](Options& o, const std::string& v) {
         o.optimizer = one_of("--optimizer", v, {"sgd", "adam"});
       }},
      {"--partition", [](Options& o, const std::string& v) { o.partition = parse_partition(v); }},
      {"--checkpoint", [](Options& o, const std::string& v) { o.checkpoint = v; }},
      {"--seed",
       [](Options& o, const std::string& v) {
         o.seed = static_cast<uint64_t>(to_int("--seed", v, 0));
       }},
      {"--fusion-threshold",
       [](Options& o, const std::string& v) {
         o.fusion_threshold = to_int("--fusion-threshold", v, 0);
       }},
      {"--dropout",
       [](Options& o, const std::string& v) {
         o.dropout = v == "0" ? 0.0 : to_positive("--dropout", v);
         if (o.dropout >= 1.0)
           throw std::invalid_argument("--dropout: expected a rate in [0, 1), got '" + v + "'");
       }},
      {"--synthetic-train",
       [](Options& o, const std::string& v) {
         o.synthetic_train = to_int("--synthetic-train", v, 1);
       }},
      {"--synthetic-test",
       [](Options& o, const std::string& v) {
         o.synthetic_test = to_int("--synthetic-test", v, 1);
       }},
      {"--fail-rank",
       [](Options& o, const std::string& v) {
         o.fail_rank = static_cast<int>(to_int("--fail-rank", v, 0));
       }},
      {"--fail-at-step",
       [](Options& o, const std::string& v) { o.fail_at_step = to_int("--fail-at-step", v, 1); }},
  };
  return setters;
}

void check_combination(const Options& o) {
  if (o.resume && o.checkpoint.empty()) {
    throw std::invalid_argument("--resume: needs --checkpoint PATH to resume from");
  }
  if ((o.fail_rank >= 0) != (o.fail_at_step >= 1)) {
    throw std::invalid_argument("--fail-rank and --fail-at-step: give both or neither");
  }
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const bool has_inline_value = flag.find('=') != std::string::npos;
    if (has_inline_value) {
      value = flag.substr(flag.find('=') + 1);
      flag = flag.substr(0, flag.find('='));
    }
    if (flag == "-h" || flag == "--help") {
      options.help = true;
      continue;
    }
    if (flag == "--no-lr-scaling") {
      options.lr_scaling = false;
      continue;
    }
    if (flag == "--resume") {
      options.resume = true;
      continue;
    }
    if (flag == "--verify-sync") {
      options.verify_sync = true;
      continue;
    }
    const auto setter = valued_options().find(flag);
    if (setter == valued_options().end()) {
      throw std::invalid_argument(flag + ": unknown option (see --help)");
    }
    if (!has_inline_value) {
      if (i + 1 >= argc) throw std::invalid_argument(flag + ": needs a value");
      value = argv[++i];
    }
    setter->second(options, value);
  }
  check_combination(options);
  return options;
}

const char* usage_text() {
  return R"(usage: hvdcrun -np N hvdc-train [options]

Trains a small network data-parallel with hvdc, the way Horovod trains MXNet Gluon models.

  --data SOURCE        synthetic (default), digits (sklearn's 8x8 digits, from Debian's
                       python3-sklearn) or idx:DIR (MNIST IDX files in DIR, plain or .gz)
  --model KIND         mlp (default) or cnn
  --epochs N           passes over the training set (default 20)
  --batch-size N       samples per rank per step (default 32)
  --lr RATE            learning rate (default: sgd 0.05, adam 0.002), multiplied by the
                       number of ranks unless --no-lr-scaling
  --no-lr-scaling      use --lr as given
  --optimizer NAME     sgd (momentum 0.9, default) or adam
  --partition HOW      shard (default): a shuffled share of the set per rank each epoch;
                       random: each rank reads random samples from the whole set
  --checkpoint PATH    rank 0 writes the training state there after every epoch
  --resume             start from --checkpoint (rank 0 reads it, every rank receives it)
  --seed N             seeds initialisation, shuffling and dropout (default 42)
  --fusion-threshold B bytes hvdc fuses into one allreduce (default: hvdc's setting)
  --dropout RATE       dropout rate in [0, 1) (default 0.1)
  --synthetic-train N, --synthetic-test N
                       sizes of the synthetic set (default 1024 and 256)
  --verify-sync        after every epoch, check that all ranks hold identical parameters
  --fail-rank R --fail-at-step S
                       test hook: rank R exits with status 3 before global step S
  -h, --help           this text
)";
}

}  // namespace trainer

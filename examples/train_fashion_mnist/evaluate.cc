#include "evaluate.h"

#include <algorithm>

#include <torch/csrc/autograd/grad_mode.h>

#include <chorus/chorus.h>
#include <chorus/torch/ops.h>

namespace chorus_examples {

Accuracy evaluate(FashionNet& model, const FashionMnist& test, int64_t batch_size) {
  const int64_t n = test.images().size(0);
  const int64_t rank = chorus::rank(), size = chorus::size();
  const int64_t begin = n * rank / size, end = n * (rank + 1) / size;

  const bool was_training = model->is_training();
  model->eval();  // dropout off
  int64_t correct = 0;
  {
    torch::NoGradGuard no_grad;
    for (int64_t i = begin; i < end; i += batch_size) {
      const int64_t stop = std::min(end, i + batch_size);
      auto predicted = model->forward(test.images().slice(0, i, stop)).argmax(1);
      correct += predicted.eq(test.labels().slice(0, i, stop)).sum().item<int64_t>();
    }
  }
  model->train(was_training);

  chorus::AllreduceOptions sum;
  sum.op = chorus::Sum;
  auto counts = chorus::allreduce(torch::tensor({correct, end - begin}, torch::kInt64), "eval.correct_total", sum);
  return {counts[0].item<int64_t>(), counts[1].item<int64_t>()};
}

}  // namespace chorus_examples

package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// torchtune: a TrainJob whose trainer command is exactly "tune run" on one of Kubeflow's
// torchtune runtimes (named torchtune-<model>-<size>) gets the recipe and config chosen from
// its node and process counts and its args, plus the runtime's own output and tokenizer paths.

// TorchTuneEntrypoint is the trainer command that selects torchtune.
var TorchTuneEntrypoint = []string{"tune", "run"}

// Runtime command entries a torchtune TrainJob inherits and cannot override.
var torchTuneRuntimeConfigs = []string{"output_dir", "tokenizer.path", "checkpointer.checkpoint_dir", "tokenizer.merges_file"}

func isTorchTune(command []string) bool { return slices.Equal(command, TorchTuneEntrypoint) }

// torchTuneCommand is "tune run", the rendezvous endpoint when more than one process trains,
// the recipe and --config, and the runtime's fixed configs.
func torchTuneCommand(tj *trainerv1alpha1.TrainJob, rt *Runtime, p *Plan, numNodes int32, net Network) []string {
	gpu := trainerv1alpha1.GPUsPerNode(resourcesPerNode(tj, &p.Template.Spec))
	procs, numeric := strconv.Atoi(p.NumProcPerNode)
	cmd := slices.Clone(tj.Spec.Trainer.Command)
	if numNodes > 1 || (numeric == nil && procs > 1) || (numeric != nil && gpu > 1) {
		cmd = append(cmd, fmt.Sprintf("--rdzv_endpoint=%s:%d", net.Host(Node, 0), TrainerPort))
	}
	recipe, config := torchTuneRecipe(tj, numNodes, p.NumProcPerNode, gpu)
	cmd = append(cmd, recipe, "--config", config)
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		rj := &rt.Spec.Template.Spec.ReplicatedJobs[i]
		if ancestorOf(rj) != AncestorTrainer {
			continue
		}
		if c := container(&rj.Template.Spec.Template.Spec, Node); c != nil {
			for _, entry := range c.Command {
				if key, _, _ := strings.Cut(entry, "="); slices.Contains(torchTuneRuntimeConfigs, key) {
					cmd = append(cmd, entry)
				}
			}
		}
	}
	return cmd
}

// torchTuneRecipe picks a single-device recipe for one process on one node, LoRA or QLoRA
// recipes when the args ask for them on one node, and full fine-tuning otherwise.
func torchTuneRecipe(tj *trainerv1alpha1.TrainJob, numNodes int32, procs string, gpu int) (string, string) {
	args := tj.Spec.Trainer.Args
	qlora := argIsTrue(args, "model.quantize_base") && !argIsTrue(args, "model.use_dora")
	lora := slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, "model.lora_attn_modules") })
	single := numNodes == 1 && (procs == "1" || gpu == 1)
	recipe, suffix := "full_finetune_distributed", "_full"
	switch {
	case single && qlora:
		recipe, suffix = "lora_finetune_single_device", "_qlora_single_device"
	case single && lora:
		recipe, suffix = "lora_finetune_single_device", "_lora_single_device"
	case single:
		recipe, suffix = "full_finetune_single_device", "_full_single_device"
	case numNodes == 1 && qlora:
		recipe, suffix = "lora_finetune_distributed", "_qlora"
	case numNodes == 1 && lora:
		recipe, suffix = "lora_finetune_distributed", "_lora"
	case numNodes > 1:
		suffix = "_full_multinode"
	}
	return recipe, torchTuneModel(tj.Spec.RuntimeRef.Name) + suffix
}

// argIsTrue says whether an arg "<...item...>=true" is present.
func argIsTrue(args []string, item string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		name, value, ok := strings.Cut(a, "=")
		return ok && strings.Contains(name, item) && strings.EqualFold(strings.TrimSpace(value), "true")
	})
}

// torchTuneModel maps a runtime name torchtune-llama3.2-1b to the model llama3_2/1B.
func torchTuneModel(runtime string) string {
	parts := strings.Split(runtime, "-")
	if len(parts) != 3 {
		return ""
	}
	return strings.ReplaceAll(parts[1], ".", "_") + "/" + strings.ToUpper(parts[2])
}
